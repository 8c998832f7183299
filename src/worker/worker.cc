// The worker's side of an evaluation, in two processes (docs/worker-protocol.md).
//
// The supervisor is trusted: it never loads candidate code. It forks the child, which opens
// the device, loads the candidate and does what it is told over a socket, one step at a time:
//   open device -> allocate and upload the check sets -> calibrate (null runs, before any
//   candidate code is in the process) -> load -> checks (each set twice, two poisons; the
//   first one recorded: which kernels ran, result.json's "kernels") ->
//   warm-up -> timed runs (each with fresh inputs drawn from a seed the supervisor picks,
//   poisoned outputs and a flushed cache) -> precision report.
// The supervisor takes the wall clock of every timed run itself, checks every timed output
// (fully written, finite, never a repeat of another run's), keeps a random sample of them for
// the orchestrator's reference check, counts the child's threads from /proc, and writes
// result.json and every output file itself, from bytes the child sent. It is not dumpable, so
// the child can neither trace it nor open its memory or file descriptors; the child's stdout
// and stderr go to a pipe the supervisor drains. When the job ends the child is killed
// (no exit handler or destructor of the candidate runs), and as its last act the supervisor
// prints result.json's SHA-256 on its own stdout, which the child never held: the
// orchestrator trusts result.json only when the hash matches.
#include "worker/worker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <iostream>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "backend/devices.h"
#include "backend/registry.h"
#include "base/device_lock.h"
#include "base/files.h"
#include "base/stats.h"
#include "base/subprocess.h"
#include "eval/inputs.h"
#include "worker/channel.h"
#include "worker/timed_output.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double NowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Bytes after each output buffer, filled with a canary and checked after every check run:
// a candidate that writes past the end of an output (a hard-coded size, a vector tail) is
// caught even when the write lands in memory it could legally touch.
constexpr size_t kGuardBytes = 4096;
constexpr unsigned char kCanary = 0xC5;

void Stage(const std::string& what) { std::fprintf(stderr, "kforge-worker: %s\n", what.c_str()); }

size_t OutputBytes(const InputSet& set) {
  size_t n = 0;
  for (const TensorFile& t : set.outputs) n += t.shape.bytes();
  return n;
}

// --- The child: everything that touches the device and the candidate. ----------------------

struct SetBuffers {
  std::vector<LaunchTensor> inputs, outputs;
  BufferId scratch = -1;
  int64_t scratch_bytes = 0;
};

// Outputs travel from the child to the supervisor through a MAP_SHARED | MAP_ANONYMOUS region
// the supervisor maps before the fork, as large as the largest set's outputs: the child copies
// them there from the device and says how many bytes it put there ("shared" in its reply); the
// supervisor copies them out before it looks at them, so what it checks is a snapshot the child
// can no longer change. No descriptor names the region, so the child cannot resize it (a
// truncated file mapping would raise SIGBUS in the supervisor); whatever it writes there, and
// when, is no more than sending other bytes. On the 2-core VM an 8 MB output took 6 to 8 ms
// through the socket (many small reads and wake-ups); it is one copy each side now.
struct SharedOutputs {
  char* data = nullptr;  // null: the socket carries the outputs (mmap failed)
  size_t bytes = 0;
};

class Child {
 public:
  Child(const Job& job, fs::path dir, int sock, SharedOutputs shared)
      : job_(job), dir_(std::move(dir)), sock_(sock), shared_(shared) {}
  [[noreturn]] void Serve();

 private:
  Result<json> Handle(const json& cmd, std::string* blob);
  Result<json> Open();
  Result<json> Alloc();
  Result<json> Reupload(const json& cmd);
  Result<json> Load();
  Result<json> Check(int set, int which, const std::string& record, std::string* blob);
  Result<json> Warmup(const json& cmd);
  Result<json> Prepare(const json& cmd);
  Result<json> Flush();
  Result<json> Go(bool null);
  Result<json> Collect(std::string* blob);
  Status Poison(int set, int which);
  LaunchArgs Args(int set) const;
  Result<std::string> InputHash(BufferId b, size_t bytes, const char* host = nullptr, std::string* kept = nullptr);
  Result<const char*> HostBytes(BufferId b, size_t bytes);
  Result<std::vector<std::string>> HashInputs(int set);
  // The shared region when set's outputs fit in it, else null (they go in the reply's blob).
  char* SharedFor(int set) const;
  // Reads set's outputs back into the shared region (true) or, when it cannot hold them,
  // into `all` (false).
  Result<bool> ReadOutputs(int set, std::string* all);

  const Job& job_;
  fs::path dir_;
  int sock_;
  SharedOutputs shared_;
  std::unique_ptr<Device> device_;
  std::vector<SetBuffers> sets_;
  bool loaded_ = false;
  int prepared_ = -1;                      // the set the next "go" runs
  std::vector<std::string> fresh_hashes_;  // of the inputs "prepare" drew (empty: not fresh)
  // Reused from run to run (fresh inputs, input hashes, guard checks): a new 8 MB string per
  // timed run cost more in page faults than the copy itself.
  std::string staging_;
};

void Child::Serve() {
  std::string blob;  // outputs sent back: its capacity is kept from reply to reply
  for (;;) {
    Result<Message> m = ReceiveMessage(sock_, 0);
    if (!m.ok()) _exit(0);  // the supervisor is done with us (or gone)
    blob.clear();
    Result<json> reply = Handle(m->head, &blob);
    json head = reply.ok() ? *reply : json{{"error", reply.status().message()}};
    // A launch that failed on a run-time kernel build: the build's log and source go with the
    // error, for the orchestrator's compile_error.
    if (!reply.ok() && device_) {
      json build = device_->LastBuildFailure();
      if (!build.is_null()) head["build_failure"] = std::move(build);
    }
    if (!SendMessage(sock_, head, reply.ok() ? blob : std::string()).ok()) _exit(0);
  }
}

Result<json> Child::Handle(const json& cmd, std::string* blob) {
  const std::string op = cmd.value("op", "");
  if (op == "open") return Open();
  if (!device_) return Status::InvalidArgument("no device open");
  if (op == "peaks") {
    KF_ASSIGN_OR_RETURN(Peaks p, device_->MeasurePeaks());
    return json{{"peaks", {{"bandwidth_gbs", p.bandwidth_gbs}, {"fp32_gflops", p.fp32_gflops}, {"detail", p.detail}}}};
  }
  if (op == "alloc") return Alloc();
  if (op == "reupload") return Reupload(cmd);
  if (op == "load") return Load();
  int set = cmd.value("set", 0);
  if (set < 0 || set >= static_cast<int>(sets_.size())) return Status::InvalidArgument("no such set");
  if (op == "check") return Check(set, cmd.value("which", 0), cmd.value("record", ""), blob);
  if (op == "hash_inputs") {
    KF_ASSIGN_OR_RETURN(std::vector<std::string> h, HashInputs(set));
    return json{{"hashes", h}};
  }
  if (op == "warmup") return Warmup(cmd);
  if (op == "prepare") return Prepare(cmd);
  if (op == "flush") return Flush();
  if (op == "go") return Go(cmd.value("null", false));
  if (op == "collect") return Collect(blob);
  if (op == "precision") return json{{"precision", device_->PrecisionReport()}};
  return Status::InvalidArgument("unknown command '" + op + "'");
}

Result<json> Child::Open() {
  const DeviceFactory* factory = FindDeviceFactory(job_.backend);
  if (!factory) return Status::InvalidArgument("backend " + job_.backend + " does not run in kforge-worker");
  KF_ASSIGN_OR_RETURN(device_, factory->open(job_.device));
  // The head start of timed and null runs (Go), before the fingerprint that says what was set.
  if (job_.timing && job_.timing->queue_ms > 0) KF_RETURN_IF_ERROR(device_->SetQueue(job_.timing->queue_ms));
  // Every check, null and timed run hands its outputs over in the shared region: page-locked,
  // a KernelBench GEMM's 32 MiB come back in one DMA (a null run's hand-over took 30 ms on an
  // H100 through the driver's staging buffer).
  const bool pinned = shared_.data && device_->PinHostMemory(shared_.data, shared_.bytes);
  return json{{"fingerprint", device_->Fingerprint()}, {"llc_bytes", device_->LastLevelCacheBytes()}, {"shared_region_pinned", pinned}};
}

// A file mapped read-only (the orchestrator's input files in the job folder, on /dev/shm when
// it has room): the page cache's own pages, no copy into fresh memory. Read before any
// candidate code is in the process.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  MappedFile& operator=(MappedFile&& o) noexcept {
    if (this != &o) {
      Unmap();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~MappedFile() { Unmap(); }
  static Result<MappedFile> Open(const fs::path& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IoError("cannot open " + path.string() + ": " + std::strerror(errno));
    struct stat st {};
    MappedFile m;
    if (fstat(fd, &st) != 0) {
      close(fd);
      return Status::IoError("cannot stat " + path.string() + ": " + std::strerror(errno));
    }
    m.size_ = static_cast<size_t>(st.st_size);
    if (m.size_ > 0) {
      void* p = mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        close(fd);
        m.size_ = 0;
        return Status::IoError("cannot map " + path.string() + ": " + std::strerror(errno));
      }
      m.data_ = static_cast<const char*>(p);
    }
    close(fd);
    return m;
  }
  const char* data() const { return data_ ? data_ : ""; }
  size_t size() const { return size_; }

 private:
  void Unmap() {
    if (data_) munmap(const_cast<char*>(data_), size_);
    data_ = nullptr;
  }
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// The orchestrator's input files of `sets`, each mapped once: sets may name the same file (a
// model's parameters, equal in every set), which is then kept until its last use.
class InputFiles {
 public:
  InputFiles(const Job& job, const fs::path& dir, const std::vector<int>& sets) : dir_(dir) {
    for (int s : sets)
      for (const TensorFile& t : job.sets[s].inputs)
        if (!t.file.empty()) ++uses_[t.file];
  }
  // The bytes of input t (drawn here when it has a draw_seed; zeros when it has no file), valid
  // until the next call, and where their host hash is kept once computed (Child::InputHash: a
  // device with a digest never needs it; a file's is computed once for all its sets).
  struct Bytes {
    const char* data;
    size_t size;
    std::string* hash;
  };
  Result<Bytes> Next(const TensorFile& t, double magnitude) {
    if (t.draw_seed) {
      TensorShape drawn = t.shape;
      if (t.gen->dtype) drawn.dtype = *t.gen->dtype;
      if (drawn.dtype != t.shape.dtype && !(IsFloating(drawn.dtype) && t.shape.dtype == DType::kFloat64))
        return Status::InvalidArgument("input '" + t.shape.name + "' is drawn as " + DTypeName(drawn.dtype) +
                                       " but held as " + DTypeName(t.shape.dtype) + ": only floating values widen to float64");
      drawn_.resize(drawn.bytes());
      GenerateBytesInto(drawn, t.gen->dist, t.gen->key, *t.draw_seed, magnitude, drawn_.data());
      if (drawn.dtype == t.shape.dtype) {
        made_.swap(drawn_);
      } else {
        made_.resize(t.shape.bytes());
        ToDouble(drawn.dtype, drawn_.data(), static_cast<size_t>(drawn.numel()), reinterpret_cast<double*>(made_.data()));
      }
      made_hash_.clear();
      return Bytes{made_.data(), made_.size(), &made_hash_};
    }
    if (t.file.empty()) {
      made_.assign(t.shape.bytes(), '\0');
      made_hash_.clear();
      return Bytes{made_.data(), made_.size(), &made_hash_};
    }
    Entry& e = held_[t.file];
    if (!e.mapped) {
      KF_ASSIGN_OR_RETURN(e.file, MappedFile::Open(dir_ / t.file));
      e.mapped = true;
      if (e.file.size() != t.shape.bytes()) return Status::InvalidArgument("input file " + t.file + " has the wrong size");
    } else if (e.file.size() != t.shape.bytes()) {
      return Status::InvalidArgument("input file " + t.file + " is named by inputs of different sizes");
    }
    if (--uses_[t.file] > 0) return Bytes{e.file.data(), e.file.size(), &e.hash};  // kept for its next use
    last_ = std::move(e);
    held_.erase(t.file);
    return Bytes{last_.file.data(), last_.file.size(), &last_.hash};
  }

 private:
  struct Entry {
    MappedFile file;
    bool mapped = false;
    std::string hash;  // of its bytes, once asked for
  };
  fs::path dir_;
  std::map<std::string, int> uses_;
  std::map<std::string, Entry> held_;
  Entry last_;
  std::string made_, drawn_;  // an input made here (zeros, or drawn and widened); a draw before widening
  std::string made_hash_;
};

std::vector<int> AllSets(const Job& job) {
  std::vector<int> all(job.sets.size());
  for (size_t s = 0; s < all.size(); ++s) all[s] = static_cast<int>(s);
  return all;
}

// Buffers for every set and the orchestrator's inputs; no candidate code yet.
Result<json> Child::Alloc() {
  sets_.resize(job_.sets.size());
  json hashes = json::array();
  InputFiles files(job_, dir_, AllSets(job_));
  // Sets whose inputs name the same file (a model's parameters, equal in every set) share its
  // device buffer: uploaded once, hashed after every set's check as before, so a candidate that
  // writes into it is caught at the first set that ran. Within one set, inputs never alias.
  std::map<std::string, BufferId> by_file;
  for (size_t s = 0; s < job_.sets.size(); ++s) {
    const InputSet& in = job_.sets[s];
    SetBuffers& b = sets_[s];
    json set_hashes = json::array();
    std::set<BufferId> in_set;
    for (const TensorFile& t : in.inputs) {
      KF_ASSIGN_OR_RETURN(auto bytes, files.Next(t, in.magnitude));
      const bool from_file = !t.file.empty() && !t.draw_seed;
      auto held = from_file ? by_file.find(t.file) : by_file.end();
      BufferId id;
      if (held != by_file.end() && !in_set.contains(held->second)) {
        id = held->second;
      } else {
        KF_ASSIGN_OR_RETURN(id, device_->Alloc(std::max<size_t>(bytes.size, 1)));
        KF_RETURN_IF_ERROR(device_->Write(id, bytes.data, bytes.size));
        if (from_file && held == by_file.end()) by_file.emplace(t.file, id);
      }
      in_set.insert(id);
      b.inputs.push_back({t.shape, id});
      KF_ASSIGN_OR_RETURN(std::string hash, InputHash(id, bytes.size, bytes.data, bytes.hash));
      set_hashes.push_back(std::move(hash));
    }
    for (const TensorFile& t : in.outputs) {
      KF_ASSIGN_OR_RETURN(BufferId id, device_->Alloc(t.shape.bytes() + kGuardBytes));
      KF_RETURN_IF_ERROR(device_->Fill(id, &kCanary, 1, t.shape.bytes() + kGuardBytes));
      b.outputs.push_back({t.shape, id});
    }
    hashes.push_back(set_hashes);
  }
  return json{{"input_hashes", hashes}};
}

// The orchestrator's inputs again, over what calibration drew into the same buffers (the
// sets it used: "sets").
Result<json> Child::Reupload(const json& cmd) {
  const std::vector<int> sets = cmd.at("sets").get<std::vector<int>>();
  for (int s : sets)
    if (s < 0 || s >= static_cast<int>(job_.sets.size())) return Status::InvalidArgument("no such set");
  InputFiles files(job_, dir_, sets);
  for (int s : sets) {
    for (size_t k = 0; k < job_.sets[s].inputs.size(); ++k) {
      KF_ASSIGN_OR_RETURN(auto bytes, files.Next(job_.sets[s].inputs[k], job_.sets[s].magnitude));
      KF_RETURN_IF_ERROR(device_->Write(sets_[s].inputs[k].buffer, bytes.data, bytes.size));
    }
  }
  return json::object();
}

Result<json> Child::Load() {
  KernelSpec spec{(dir_ / job_.library).string(), job_.entry, ""};
  if (!job_.program_source_file.empty()) {
    KF_ASSIGN_OR_RETURN(spec.program_source, ReadFile(dir_ / job_.program_source_file));
  }
  KF_RETURN_IF_ERROR(device_->Load(spec));
  loaded_ = true;
  for (size_t s = 0; s < sets_.size(); ++s) {
    SetBuffers& b = sets_[s];
    KF_ASSIGN_OR_RETURN(b.scratch_bytes, device_->ScratchBytes(Args(static_cast<int>(s))));
    if (b.scratch_bytes > 0) {
      KF_ASSIGN_OR_RETURN(b.scratch, device_->Alloc(static_cast<size_t>(b.scratch_bytes)));
    }
  }
  return json::object();
}

LaunchArgs Child::Args(int set) const {
  const SetBuffers& b = sets_[set];
  LaunchArgs a;
  a.inputs = b.inputs;
  a.outputs = b.outputs;
  a.attrs = job_.sets[set].attrs;
  a.scratch = b.scratch;
  a.scratch_bytes = b.scratch_bytes;
  return a;
}

Status Child::Poison(int set, int which) {
  const SetBuffers& b = sets_[set];
  for (const LaunchTensor& t : b.outputs) {
    unsigned char pattern[8];
    size_t n = PoisonPattern(t.shape.dtype, which, pattern);
    KF_RETURN_IF_ERROR(device_->Fill(t.buffer, pattern, n, t.shape.bytes()));
  }
  if (b.scratch >= 0) {
    unsigned char byte = which ? 0x5a : 0xa5;
    KF_RETURN_IF_ERROR(device_->Fill(b.scratch, &byte, 1, static_cast<size_t>(b.scratch_bytes)));
  }
  return device_->Synchronize();
}

// The hash of input buffer b (`bytes` long): the device's digest where it has one (no copy to
// the host: a KernelBench GEMM's 256 MiB weight after every check set took most of an H200
// judgement's checks), else HashHex of the bytes: `host` when the caller holds them (kept in
// `*kept` once computed, when given), else read back.
Result<std::string> Child::InputHash(BufferId b, size_t bytes, const char* host, std::string* kept) {
  KF_ASSIGN_OR_RETURN(std::string digest, device_->Digest(b, bytes));
  if (!digest.empty()) return digest;
  if (kept && !kept->empty()) return *kept;
  if (!host) {
    KF_ASSIGN_OR_RETURN(host, HostBytes(b, bytes));
  }
  std::string hash = HashHex(host, bytes);
  if (kept) *kept = hash;
  return hash;
}

// b's first `bytes` on the host: where they lie when the device's buffers are host memory (the
// CPU), else read back into staging (valid until staging is next used).
Result<const char*> Child::HostBytes(BufferId b, size_t bytes) {
  if (const char* mem = device_->HostMemory(b)) return mem;
  staging_.resize(bytes);
  KF_RETURN_IF_ERROR(device_->Read(b, staging_.data(), staging_.size()));
  return static_cast<const char*>(staging_.data());
}

// The inputs' hashes as Alloc and Prepare took them.
Result<std::vector<std::string>> Child::HashInputs(int set) {
  std::vector<std::string> hashes;
  for (const LaunchTensor& t : sets_[set].inputs) {
    KF_ASSIGN_OR_RETURN(std::string hash, InputHash(t.buffer, t.shape.bytes()));
    hashes.push_back(std::move(hash));
  }
  return hashes;
}

char* Child::SharedFor(int set) const {
  return shared_.data && OutputBytes(job_.sets[set]) <= shared_.bytes ? shared_.data : nullptr;
}

Result<bool> Child::ReadOutputs(int set, std::string* all) {
  char* to = SharedFor(set);
  const bool shared = to != nullptr;
  if (!shared) {
    all->resize(OutputBytes(job_.sets[set]));
    to = all->data();
  }
  size_t offset = 0;
  for (const LaunchTensor& t : sets_[set].outputs) {
    KF_RETURN_IF_ERROR(device_->Read(t.buffer, to + offset, t.shape.bytes()));
    offset += t.shape.bytes();
  }
  return shared;
}

// "" when the guard bytes after output t (`bytes`, `size` long with them) still hold the canary.
std::string GuardOverrun(const LaunchTensor& t, const char* bytes, size_t size) {
  for (size_t k = t.shape.bytes(); k < size; ++k)
    if (static_cast<unsigned char>(bytes[k]) != kCanary)
      return "wrote past the end of output '" + t.shape.name + "' (byte " + std::to_string(k - t.shape.bytes()) + " after it)";
  return std::string();
}

// One check run. With `record` (the supervisor asks on the first check only) the device
// records which kernels this one launch ran, between the poison and the read-back, so that
// neither kforge's fills nor its copies are in it: the reply's "kernels".
Result<json> Child::Check(int set, int which, const std::string& record, std::string* blob) {
  if (!loaded_) return Status::InvalidArgument("nothing loaded");
  KF_RETURN_IF_ERROR(Poison(set, which));
  bool recording = !record.empty() && device_->StartKernelRecord(record).ok();
  Result<LaunchTiming> launched = device_->Launch(Args(set));
  Result<json> kernels = recording ? device_->StopKernelRecord() : Result<json>(Status::Unavailable("not recorded"));
  KF_RETURN_IF_ERROR(launched.status());
  const LaunchTiming& t = *launched;
  json reply = {{"device_ms", t.device_ms}};
  if (kernels.ok()) reply["kernels"] = *kernels;
  // Each output with its guard bytes: the guard checked, the output sent (read back once, or on
  // the CPU read where it lies: a check run is not timed, and a thread of the candidate's could
  // rewrite the canary after a copy as well).
  blob->clear();
  char* shared = SharedFor(set);
  size_t offset = 0;
  for (const LaunchTensor& out : sets_[set].outputs) {
    const size_t with_guard = out.shape.bytes() + kGuardBytes;
    KF_ASSIGN_OR_RETURN(const char* bytes, HostBytes(out.buffer, with_guard));
    if (!reply.contains("overrun")) {
      std::string overrun = GuardOverrun(out, bytes, with_guard);
      if (!overrun.empty()) reply["overrun"] = overrun;
    }
    if (shared)
      std::memcpy(shared + offset, bytes, out.shape.bytes());
    else
      blob->append(bytes, out.shape.bytes());
    offset += out.shape.bytes();
  }
  if (shared) reply["shared"] = OutputBytes(job_.sets[set]);
  return reply;
}

Result<json> Child::Warmup(const json& cmd) {
  std::vector<int> sets = cmd.at("sets").get<std::vector<int>>();
  int runs = cmd.value("runs", 3);
  double ms = cmd.value("ms", 30.0), start = NowMs();
  for (int i = 0; i < 1000 && (i < runs || NowMs() - start < ms); ++i) {
    int set = sets[i % sets.size()];
    if (set < 0 || set >= static_cast<int>(sets_.size())) return Status::InvalidArgument("no such set");
    KF_RETURN_IF_ERROR(device_->Launch(Args(set)).status());
  }
  return json::object();
}

// Draws the next timed run's inputs (when a seed is given), poisons the outputs, flushes.
Result<json> Child::Prepare(const json& cmd) {
  int set = cmd.at("set").get<int>();
  fresh_hashes_.clear();
  if (cmd.contains("seed")) {
    uint64_t seed = cmd["seed"].get<uint64_t>();
    const InputSet& in = job_.sets[set];
    for (size_t k = 0; k < in.inputs.size(); ++k) {
      const TensorFile& t = in.inputs[k];
      if (!t.gen) return Status::InvalidArgument("input '" + t.shape.name + "' has no generator for fresh inputs");
      // Drawn into staging and hashed there, never where the candidate's code could change
      // them between the draw and the hash (a thread of its own, on the CPU): the hash is of
      // what was drawn.
      staging_.resize(t.shape.bytes());
      GenerateBytesInto(t.shape, t.gen->dist, t.gen->key, seed, in.magnitude, staging_.data());
      KF_RETURN_IF_ERROR(device_->Write(sets_[set].inputs[k].buffer, staging_.data(), staging_.size()));
      KF_ASSIGN_OR_RETURN(std::string hash, InputHash(sets_[set].inputs[k].buffer, staging_.size(), staging_.data()));
      fresh_hashes_.push_back(std::move(hash));
    }
  }
  KF_RETURN_IF_ERROR(Poison(set, cmd.value("poison", 0)));
  if (cmd.value("flush", false)) KF_RETURN_IF_ERROR(device_->FlushCaches());
  KF_RETURN_IF_ERROR(device_->Synchronize());
  prepared_ = set;
  return json{{"ready", true}};
}

// The prepared run's cache flush, apart from its prepare: the supervisor takes the device
// exclusive between the two.
Result<json> Child::Flush() {
  if (prepared_ < 0) return Status::InvalidArgument("nothing prepared");
  KF_RETURN_IF_ERROR(device_->FlushCaches());
  KF_RETURN_IF_ERROR(device_->Synchronize());
  return json{{"flushed", true}};
}

// One run of the prepared set (a null run before the candidate is loaded).
Result<json> Child::Go(bool null) {
  if (prepared_ < 0) return Status::InvalidArgument("nothing prepared");
  if (!null && !loaded_) return Status::InvalidArgument("nothing loaded");
  if (null && loaded_) return Status::InvalidArgument("null runs come before the candidate is loaded");
  LaunchArgs args = Args(prepared_);
  args.queued = true;
  KF_ASSIGN_OR_RETURN(LaunchTiming t, device_->Launch(args));  // unloaded: times nothing
  json reply = {{"device_ms", t.device_ms}, {"host_ms", t.host_ms}};
  if (t.enqueue_ms >= 0) reply["enqueue_ms"] = t.enqueue_ms;
  return reply;
}

// The last run's outputs, and whether its inputs still hold what was drawn.
Result<json> Child::Collect(std::string* blob) {
  if (prepared_ < 0) return Status::InvalidArgument("nothing prepared");
  int set = prepared_;
  prepared_ = -1;
  KF_ASSIGN_OR_RETURN(bool shared, ReadOutputs(set, blob));
  json reply = json::object();
  if (shared) reply["shared"] = OutputBytes(job_.sets[set]);
  // Fresh inputs are hashed as drawn and checked after the run. Without them every timed output
  // must equal its set's checked output byte for byte, and the inputs are hashed before and
  // after the timed runs: reading back and hashing the inputs here too (290 MB a run for a
  // KernelBench GEMM's weight) cost 180 ms per timed and null run on the H200.
  if (!fresh_hashes_.empty()) {
    KF_ASSIGN_OR_RETURN(std::vector<std::string> after, HashInputs(set));
    reply["inputs_changed"] = after != fresh_hashes_;
  }
  return reply;
}

// --- The supervisor. ------------------------------------------------------------------------

uint64_t FreshSeed() {
  uint64_t v = 0;
  while (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {}
  return v >> 1;  // 63 bits: a JSON integer every reader keeps exactly
}

uint64_t RandomBelow(uint64_t n) { return n == 0 ? 0 : FreshSeed() % n; }

struct Sample {
  int run = 0, set = 0;
  uint64_t seed = 0;
  std::string outputs;
};

class Supervisor {
 public:
  Supervisor(const Job& job, fs::path dir) : job_(job), dir_(std::move(dir)) {}
  Status Run();

 private:
  Status StartChild();
  // Sends one command and waits for the reply. A child that died, flooded its output or sent
  // garbage ends the job: recorded as an error at `stage`, and the returned status is not ok.
  Result<Message> Call(const std::string& stage, const json& cmd, uint64_t max_blob = 0);
  // Call in two halves, for a command whose reply is read later: the child works on it while
  // the supervisor does its own work (checks the last timed run's outputs).
  Status Send(const std::string& stage, const json& cmd);
  Result<Message> Receive(const std::string& stage, uint64_t max_blob = 0);
  // Ends the job on a channel that failed with `why`: records how the child ended.
  Status ChannelFailed(const std::string& stage, const Status& why);
  // `build_failure`: the child's record of a run-time kernel build that failed (an object), kept
  // in the error as it came; the orchestrator reads it as untrusted text.
  Status Fail(const std::string& stage, const std::string& message, const json& build_failure = json());
  Status Save() { return WriteFileAtomic(dir_ / "result.json", result_.dump(1)); }
  Status WriteOutput(const std::string& name, const char* data, size_t bytes);
  int ChildThreads() const;
  Status Calibrate();
  Status Checks();
  Status Timing();
  void EndChild();
  Status Finish();
  // Closes the phase that ran since the last call (its milliseconds added to result.json's
  // "phases_ms") and names the next one: where a job's time goes, for the judge's benchmark.
  // Ends the current phase on the supervisor's clock (result.json's phases_ms) and starts
  // `next`; with `progress`, also the stage line the orchestrator reads.
  void Phase(const std::string& next, const std::string& progress = "");
  // The device lock (job.lock_file; a no-op for a job without one: the orchestrator then
  // holds the device). Every command to the child holds it shared from its Send to its
  // Receive, so that another job's timed run waits for one command at most; Exclusive() holds
  // it for a null or timed run's flush and call, until Unlock(). Returns the milliseconds waited.
  double Exclusive();
  void Unlock();

  const Job& job_;
  std::unique_ptr<DeviceLockFile> lock_;  // opened after the fork: the child has no descriptor of it
  bool exclusive_ = false;                // held exclusive (Exclusive() until Unlock())
  bool call_shared_ = false;              // held shared for the command in flight
  fs::path dir_;
  pid_t child_ = -1;
  int sock_ = -1;
  SharedOutputs shared_;  // read-only on this side after the fork
  // The buffer the next outputs handed over through shared_ are copied into (Recycle gives one
  // back). A fresh one per null, check or timed run, past glibc's mmap threshold (32 MiB, a
  // KernelBench GEMM's output), was a new mapping whose pages the kernel zeroed every time: on
  // the VM a 32 MiB null run's hand-over took 23 ms with it, 11 ms without.
  std::string spare_blob_;
  void Recycle(std::string&& blob) {
    if (blob.capacity() > spare_blob_.capacity()) spare_blob_ = std::move(blob);
  }
  OutputDrain drain_;
  json result_ = json::object();
  json files_ = json::object();  // output file -> SHA-256
  bool failed_ = false;
  std::string phase_;
  double phase_start_ = NowMs();
};

void Supervisor::Phase(const std::string& next, const std::string& progress) {
  double now = NowMs();
  if (!phase_.empty()) {
    json& phases = result_["phases_ms"];
    if (!phases.is_object()) phases = json::object();
    phases[phase_] = phases.value(phase_, 0.0) + (now - phase_start_);
  }
  phase_ = next;
  phase_start_ = now;
  if (!progress.empty()) Stage(progress);
}

double Supervisor::Exclusive() {
  if (!lock_) return 0;
  double t0 = NowMs();
  lock_->Exclusive();
  exclusive_ = true;
  return NowMs() - t0;
}

void Supervisor::Unlock() {
  if (lock_) lock_->Release();
  exclusive_ = false;
}

Status Supervisor::StartChild() {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return Status::Internal(std::string("PR_SET_DUMPABLE: ") + std::strerror(errno));
  int sv[2], out[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return Status::Internal(std::string("socketpair: ") + std::strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) return Status::Internal(std::string("pipe: ") + std::strerror(errno));
  size_t largest = 0;
  for (const InputSet& set : job_.sets) largest = std::max(largest, OutputBytes(set));
  if (largest > 0) {
    void* p = mmap(nullptr, largest, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) shared_ = {static_cast<char*>(p), largest};
  }
  std::fflush(nullptr);
  child_ = fork();
  if (child_ < 0) return Status::Unavailable(std::string("fork: ") + std::strerror(errno));
  if (child_ == 0) {
    // The child keeps neither the supervisor's stdout (the result channel) nor its end of
    // the socket; its own output goes to the drain pipe.
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0) _exit(127);
    close(sv[0]);
    close(out[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() == 1) _exit(127);
    Child(job_, dir_, sv[1], shared_).Serve();
  }
  if (shared_.data && mprotect(shared_.data, shared_.bytes, PROT_READ) != 0) return Status::Internal(std::string("mprotect: ") + std::strerror(errno));
  close(sv[1]);
  close(out[1]);
  sock_ = sv[0];
  drain_.fd = out[0];
  fcntl(drain_.fd, F_SETFL, fcntl(drain_.fd, F_GETFL) | O_NONBLOCK);
  return Status::Ok();
}

Result<Message> Supervisor::Call(const std::string& stage, const json& cmd, uint64_t max_blob) {
  KF_RETURN_IF_ERROR(Send(stage, cmd));
  return Receive(stage, max_blob);
}

Status Supervisor::Send(const std::string& stage, const json& cmd) {
  if (lock_ && !exclusive_ && !call_shared_) {
    lock_->Shared();
    call_shared_ = true;
  }
  Status sent = SendMessage(sock_, cmd);
  return sent.ok() ? sent : ChannelFailed(stage, sent);
}

Result<Message> Supervisor::Receive(const std::string& stage, uint64_t max_blob) {
  Result<Message> m = ReceiveMessage(sock_, max_blob, &drain_);
  struct Release {  // the command's shared hold ends with its reply, however it went
    Supervisor* s;
    ~Release() {
      if (s->call_shared_ && !s->exclusive_) s->lock_->Release();
      s->call_shared_ = false;
    }
  } release{this};
  if (m.ok() && m->head.contains("error")) {
    KF_RETURN_IF_ERROR(Fail(stage, m->head["error"].is_string() ? m->head["error"].get<std::string>() : m->head["error"].dump(),
                            m->head.value("build_failure", json())));
    return Status::Unavailable("aborted at " + stage);
  }
  if (!m.ok()) return ChannelFailed(stage, m.status());
  if (m->head.contains("shared")) {
    // Outputs left in the shared region: exactly the bytes asked for, copied out at once.
    const json& n = m->head["shared"];
    if (!shared_.data || !n.is_number_unsigned() || n.get<uint64_t>() != max_blob || max_blob > shared_.bytes || !m->blob.empty()) {
      KF_RETURN_IF_ERROR(Fail(stage, "the candidate's process handed over outputs of the wrong size (" + n.dump() + " bytes in the shared region, " +
                                         std::to_string(max_blob) + " expected)"));
      return Status::Unavailable("aborted at " + stage);
    }
    m->blob = std::exchange(spare_blob_, std::string());
    m->blob.assign(shared_.data, max_blob);
  }
  return m;
}

Status Supervisor::ChannelFailed(const std::string& stage, const Status& failed) {
  std::string why;
  if (drain_.flooded()) {
    why = "the candidate flooded its output: wrote more than " + std::to_string(drain_.flood_bytes >> 20) + " MB";
  } else if (failed.code() == StatusCode::kInvalidArgument) {
    why = failed.message();
  } else {
    // The child is gone (or going): say how it ended.
    int status = 0;
    ProcessResult r;
    if (waitpid(child_, &status, 0) == child_) {
      child_ = -1;
      r.end = WIFSIGNALED(status) ? ProcessResult::End::kSignaled : ProcessResult::End::kExited;
      r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      why = "the candidate's process " + r.Describe();
    } else {
      why = "the candidate's process closed the channel";
    }
  }
  KF_RETURN_IF_ERROR(Fail(stage, why));
  return Status::Unavailable("aborted at " + stage);
}

Status Supervisor::Fail(const std::string& stage, const std::string& message, const json& build_failure) {
  failed_ = true;
  result_["error"] = {{"stage", stage}, {"message", message}};
  if (build_failure.is_object()) result_["error"]["build_failure"] = build_failure;
  return Save();
}

// Writes an output file; result.json's "files" lists its piece digest under its name.
Status Supervisor::WriteOutput(const std::string& name, const char* data, size_t bytes) {
  KF_ASSIGN_OR_RETURN(files_[name], WritePieceDigested(dir_ / name, data, bytes));
  return Status::Ok();
}

int Supervisor::ChildThreads() const {
  Result<std::string> status = ReadFile("/proc/" + std::to_string(child_) + "/status");
  if (!status.ok()) return 0;
  size_t pos = status->find("\nThreads:");
  return pos == std::string::npos ? 0 : std::atoi(status->c_str() + pos + 9);
}

// Null runs through the whole timed-run path before any candidate code is in the child: what
// the supervisor's clock adds to a run's device time.
Status Supervisor::Calibrate() {
  const TimingPlan& plan = *job_.timing;
  std::vector<double> gaps, collects;
  double waited = 0, prepare_ms = 0, flush_ms = 0, go_ms = 0;
  for (int i = 0; i < plan.calibration_runs; ++i) {
    int set = plan.sets[i % plan.sets.size()];
    // Exactly what a timed run's prepare does (fresh inputs, flush): what it leaves behind
    // (a busy copy engine, cold host caches) then weighs on the null run as on a timed one.
    // Locked as a timed run is (Timing): the device alone from the flush to the end of the call.
    json prep = {{"op", "prepare"}, {"set", set}, {"poison", i % 2}, {"flush", false}};
    if (plan.fresh_inputs) prep["seed"] = FreshSeed();
    double t0 = NowMs();
    if (!Call("calibration", prep).ok()) return Status::Ok();
    prepare_ms += NowMs() - t0;
    waited += Exclusive();
    t0 = NowMs();
    if (plan.flush && !Call("calibration", {{"op", "flush"}}).ok()) return Status::Ok();
    flush_ms += NowMs() - t0;
    t0 = NowMs();
    Result<Message> m = Call("calibration", {{"op", "go"}, {"null", true}});
    double wall = NowMs() - t0;
    go_ms += wall;
    Unlock();
    if (!m.ok()) return Status::Ok();
    gaps.push_back(wall - m->head.value("device_ms", 0.0));
    t0 = NowMs();
    Result<Message> collected = Call("calibration", {{"op", "collect"}}, OutputBytes(job_.sets[set]));
    if (!collected.ok()) return Status::Ok();
    collects.push_back(NowMs() - t0);
    Recycle(std::move(collected->blob));
  }
  // Where the null runs' time goes (the H100's twelve took 402 ms of a KernelBench GEMM's job,
  // more than its timed runs): a diagnostic, never judged.
  result_["phases_ms"]["calibration_lock_wait"] = waited;
  result_["phases_ms"]["calibration_prepare"] = prepare_ms;
  result_["phases_ms"]["calibration_flush"] = flush_ms;
  result_["phases_ms"]["calibration_go"] = go_ms;
  result_["phases_ms"]["calibration_collect"] = std::accumulate(collects.begin(), collects.end(), 0.0);
  double med = Median(gaps);
  std::vector<double> dev;
  for (double g : gaps) dev.push_back(std::fabs(g - med));
  result_["calibration"] = {{"overhead_ms", med}, {"overhead_mad_ms", Median(dev)}, {"collect_ms", Median(collects)},
                            {"runs", gaps.size()}};
  return Save();
}

// Check outputs written (piece digest, then the file) on a thread of their own while the child
// runs the next check: one write in flight at a time, each holding its run's outputs. The
// digests of what was written go to `files` (result.json's list) at every wait, the last one
// at destruction: every file written is listed, however the checks end.
class OutputWriter {
 public:
  OutputWriter(const fs::path& dir, json* files) : dir_(dir), files_(files) {}
  ~OutputWriter() { (void)Wait(); }
  // Waits for the write in flight, then starts this one; `written` gets the buffer the write
  // before took (empty if none), to be filled again.
  Status Write(std::vector<std::pair<std::string, size_t>> names, std::string blob, std::string* written) {
    KF_RETURN_IF_ERROR(Wait());
    *written = std::exchange(written_, std::string());
    pending_ = std::async(std::launch::async, [this, names = std::move(names), blob = std::move(blob)]() mutable -> Status {
      const double t0 = NowMs();
      size_t offset = 0;
      for (const auto& [name, bytes] : names) {
        KF_ASSIGN_OR_RETURN(std::string digest, WritePieceDigested(dir_ / name, blob.data() + offset, bytes));
        digests_.emplace_back(name, std::move(digest));
        offset += bytes;
      }
      written_ = std::move(blob);
      ms_ += NowMs() - t0;
      return Status::Ok();
    });
    return Status::Ok();
  }
  Status Wait() {
    Status status = pending_.valid() ? pending_.get() : Status::Ok();
    for (auto& [name, digest] : digests_) (*files_)[name] = digest;
    digests_.clear();
    return status;
  }
  double ms() const { return ms_; }  // writing, in all (read after Wait)

 private:
  fs::path dir_;
  json* files_;
  std::future<Status> pending_;
  std::vector<std::pair<std::string, std::string>> digests_;
  std::string written_;  // the finished write's buffer (set by its task; read after Wait)
  double ms_ = 0;
};

Status Supervisor::Checks() {
  result_["checks"] = json::array();
  const json& hashes = result_["input_hashes"];
  double hash_ms = 0;
  OutputWriter writer(dir_, &files_);
  for (int set : job_.checks) {
    json check = {{"set", set}};
    const InputSet& in = job_.sets[set];
    for (int which = 0; which < (job_.check_twice ? 2 : 1); ++which) {
      char tag = which ? 'b' : 'a';
      std::string stage = "check set " + std::to_string(set);
      Stage(stage + " poison " + tag);
      json cmd = {{"op", "check"}, {"set", set}, {"which", which}};
      // The first check of the first set is recorded (docs/worker-protocol.md "kernels"); the
      // record is copied into result.json as it came, never interpreted here.
      const bool record = job_.record_kernels && !result_.contains("kernels") && set == job_.checks.front() && which == 0;
      if (record) cmd["record"] = stage;
      Result<Message> m = Call(stage, cmd, OutputBytes(in));
      if (!m.ok()) return Status::Ok();
      if (record && m->head.contains("kernels")) result_["kernels"] = m->head["kernels"];
      if (m->blob.size() != OutputBytes(in)) return Fail(stage, "the candidate's process sent outputs of the wrong size");
      check[std::string("ms_") + tag] = m->head.value("device_ms", 0.0);
      if (!result_.contains("threads_after_first_run")) result_["threads_after_first_run"] = ChildThreads();
      if (m->head.contains("overrun")) check["overrun"] = m->head["overrun"];
      std::vector<std::pair<std::string, size_t>> names;
      for (const TensorFile& t : in.outputs) names.emplace_back(CheckOutputFile(set, tag, t.shape.name), t.shape.bytes());
      std::string written;
      KF_RETURN_IF_ERROR(writer.Write(std::move(names), std::move(m->blob), &written));
      Recycle(std::move(written));
    }
    const double h0 = NowMs();
    Result<Message> h = Call("check set " + std::to_string(set), {{"op", "hash_inputs"}, {"set", set}});
    if (!h.ok()) return Status::Ok();
    hash_ms += NowMs() - h0;
    check["input_hashes_before"] = hashes.at(static_cast<size_t>(set));
    check["input_hashes_after"] = h->head["hashes"];
    result_["checks"].push_back(check);
    result_["threads_after_checks"] = ChildThreads();
    KF_RETURN_IF_ERROR(Save());
  }
  const double w0 = NowMs();
  KF_RETURN_IF_ERROR(writer.Wait());
  // Of the checks phase: the inputs read back and hashed after each set; the output files
  // (written beside the next runs: their time in all, and what was left after the last run).
  result_["phases_ms"]["checks_hash_inputs"] = hash_ms;
  result_["phases_ms"]["checks_output_files"] = writer.ms();
  result_["phases_ms"]["checks_output_files_wait"] = NowMs() - w0;
  return Status::Ok();
}

Status Supervisor::Timing() {
  const TimingPlan& plan = *job_.timing;
  Phase("warmup", "warm-up");
  json warm = {{"op", "warmup"}, {"sets", plan.sets}, {"runs", plan.warmup_runs}, {"ms", plan.warmup_ms}};
  if (!Call("warm-up", warm).ok()) return Status::Ok();
  int threads_before = ChildThreads();
  std::vector<double> device_ms, host_ms, wall_ms, collect_ms, enqueue_ms;
  std::vector<int> used;
  std::vector<uint64_t> seeds;
  json issues = json::array();
  std::vector<std::map<std::string, int>> seen(1);  // output hash -> timed run
  std::vector<Sample> samples;
  const int k = std::max(plan.timed_checks, 0);
  // Of the timing phase: the wait for the child's prepare (the part of it the supervisor's own
  // checks of the previous run did not cover), the supervisor's output checks.
  double prepare_ms = 0, verify_ms = 0;
  // The waits for the device lock, exclusive from each run's flush to the end of its call: the
  // budget is the job's own time, not its turn behind other jobs' runs.
  double waited = 0;
  // Run i + 1 is prepared by the child while the supervisor checks run i's outputs (on the H200
  // and the 2-core VM those checks took 3 to 8 ms a run). Nothing is timed meanwhile.
  uint64_t next_seed = 0;
  auto send_prepare = [&](int i) {
    json prep = {{"op", "prepare"}, {"set", plan.sets[i % plan.sets.size()]}, {"poison", i % 2}, {"flush", false}};
    next_seed = FreshSeed();
    if (plan.fresh_inputs) prep["seed"] = next_seed;
    return Send("timed run " + std::to_string(i), prep);
  };
  bool pending = false;  // a prepare sent whose reply is not read yet
  Phase("timing", "timing");
  double start = NowMs();
  for (int i = 0; i < plan.max_runs; ++i) {
    int set = plan.sets[i % plan.sets.size()];
    const InputSet& in = job_.sets[set];
    std::string stage = "timed run " + std::to_string(i);
    if (!pending && !send_prepare(i).ok()) return Status::Ok();
    pending = false;
    const uint64_t seed = next_seed;
    double p0 = NowMs();
    if (!Receive(stage).ok()) return Status::Ok();
    prepare_ms += NowMs() - p0;
    waited += Exclusive();
    if (plan.flush) {
      p0 = NowMs();
      if (!Call(stage, {{"op", "flush"}}).ok()) return Status::Ok();
      prepare_ms += NowMs() - p0;
    }
    double t0 = NowMs();
    Result<Message> ran = Call(stage, {{"op", "go"}});
    double wall = NowMs() - t0;
    Unlock();
    if (!ran.ok()) return Status::Ok();
    t0 = NowMs();
    Result<Message> m = Call(stage, {{"op", "collect"}}, OutputBytes(in));
    double collect = NowMs() - t0;
    if (!m.ok()) return Status::Ok();
    if (m->blob.size() != OutputBytes(in)) return Fail(stage, "the candidate's process sent outputs of the wrong size");
    device_ms.push_back(ran->head.value("device_ms", 0.0));
    host_ms.push_back(ran->head.value("host_ms", 0.0));
    if (ran->head.contains("enqueue_ms") && ran->head["enqueue_ms"].is_number()) enqueue_ms.push_back(ran->head["enqueue_ms"].get<double>());
    wall_ms.push_back(wall);
    collect_ms.push_back(collect);
    used.push_back(set);
    seeds.push_back(seed);
    // Over the device times. The Python worker takes each run as judged, max(device, wall less
    // the overhead); doing that here made the tuner's microsecond-kernel test pick an 8x slower
    // configuration in 1 of 6 quiet runs (0 before), so the two samples stay apart for now.
    const double elapsed = NowMs() - start - waited;
    const int n = i + 1;
    // Per set (SetCoefficientOfVariation, base/stats.h; the Python worker's formula too).
    const bool enough = (n >= plan.min_runs && (elapsed >= plan.budget_ms || SetCoefficientOfVariation(device_ms, used) <= plan.cv_target ||
                                                (plan.precision_target > 0 && SetMedianPrecision(device_ms, used) <= plan.precision_target))) ||
                        (n >= 3 && elapsed >= 2 * plan.budget_ms) || n >= plan.max_runs;
    if (!enough) {
      if (!send_prepare(n).ok()) return Status::Ok();
      pending = true;
    }
    double v0 = NowMs();
    // Every timed output: written, finite, and (with fresh inputs) never another run's.
    std::string issue;
    if (m->head.value("inputs_changed", false)) issue = "the candidate modified its inputs";
    size_t offset = 0;
    for (const TensorFile& t : in.outputs) {
      if (issue.empty()) issue = CheckTimedOutput(t.shape, m->blob.data() + offset, i % 2, plan.reference_finite);
      offset += t.shape.bytes();
    }
    if (issue.empty() && plan.fresh_inputs && !plan.degenerate) {
      std::string h = HashHex(m->blob.data(), m->blob.size());
      auto [it, fresh] = seen[0].emplace(h, i);
      if (!fresh) issue = "outputs are byte-identical to timed run " + std::to_string(it->second) +
                          "'s, for different inputs (a skipped or cached call)";
    }
    verify_ms += NowMs() - v0;
    if (!issue.empty()) {
      issues.push_back(stage + " (fresh inputs, seed " + std::to_string(seed) + "): " + issue);
      break;
    }
    // A uniform random sample of k timed runs (reservoir), picked here, never told the child.
    if (plan.fresh_inputs && k > 0) {
      if (static_cast<int>(samples.size()) < k) {
        samples.push_back({i, set, seed, std::move(m->blob)});
      } else {
        uint64_t j = RandomBelow(static_cast<uint64_t>(i) + 1);
        if (j < static_cast<uint64_t>(k)) {
          Recycle(std::move(samples[j].outputs));
          samples[j] = {i, set, seed, std::move(m->blob)};
        }
      }
    }
    Recycle(std::move(m->blob));  // the run's outputs, unless a sample kept them (then empty)
    if (enough) break;
  }
  // A run prepared but not made (the last run's outputs failed their check): its reply read, so
  // that the next command's is the next one read.
  if (pending && !Receive("timing").ok()) return Status::Ok();
  json sample_json = json::array();
  for (const Sample& s : samples) {
    json files = json::object();
    size_t offset = 0;
    for (const TensorFile& t : job_.sets[s.set].outputs) {
      std::string name = TimedOutputFile(s.run, t.shape.name);
      KF_RETURN_IF_ERROR(WriteOutput(name, s.outputs.data() + offset, t.shape.bytes()));
      files[t.shape.name] = name;
      offset += t.shape.bytes();
    }
    sample_json.push_back({{"run", s.run}, {"set", s.set}, {"seed", s.seed}, {"files", files}});
  }
  json timing = {{"device_ms", device_ms}, {"host_ms", host_ms}, {"wall_ms", wall_ms}, {"collect_ms", collect_ms}, {"sets_used", used},
                 {"seeds", seeds}, {"fresh_inputs", plan.fresh_inputs}, {"issues", issues},
                 {"samples", sample_json}, {"threads_before", threads_before}, {"threads_after", ChildThreads()}};
  if (!enqueue_ms.empty()) timing["enqueue_ms"] = enqueue_ms;  // behind the device's head start (Device::SetQueue)
  if (result_.contains("calibration")) {
    timing["overhead_ms"] = result_["calibration"]["overhead_ms"];
    timing["overhead_mad_ms"] = result_["calibration"]["overhead_mad_ms"];
    timing["collect_overhead_ms"] = result_["calibration"]["collect_ms"];
  }
  result_["timing"] = timing;
  result_["phases_ms"]["timing_prepare"] = prepare_ms;
  result_["phases_ms"]["timing_collect"] = std::accumulate(collect_ms.begin(), collect_ms.end(), 0.0);
  result_["phases_ms"]["timing_verify"] = verify_ms;
  result_["phases_ms"]["timing_lock_wait"] = waited;
  return Save();
}

void Supervisor::EndChild() {
  if (child_ > 0) {
    kill(child_, SIGKILL);
    waitpid(child_, nullptr, 0);
    child_ = -1;
  }
  if (sock_ >= 0) close(sock_);
  sock_ = -1;
  if (drain_.fd >= 0) {
    drain_.Drain();
    close(drain_.fd);
    drain_.fd = -1;
  }
  // The candidate's own output, marked so that none of it can pass for a progress line.
  std::string tail = drain_.tail.size() > drain_.keep_bytes ? drain_.tail.substr(drain_.tail.size() - drain_.keep_bytes) : drain_.tail;
  for (size_t p = 0; (p = tail.find("kforge-worker:", p)) != std::string::npos; p += 14) tail[p + 13] = ';';
  if (!tail.empty()) std::fprintf(stderr, "%s%s", tail.c_str(), tail.back() == '\n' ? "" : "\n");
}

// result.json, then its hash on stdout: the one channel the child never held.
Status Supervisor::Finish() {
  Phase("finish");
  EndChild();
  Unlock();
  Phase("");
  result_["files"] = files_;
  if (!failed_) result_["done"] = true;
  std::string text = result_.dump(1);
  KF_RETURN_IF_ERROR(WriteFileAtomic(dir_ / "result.json", text));
  Stage(failed_ ? "failed" : "done");
  std::printf("kforge-result %s\n", Sha256Hex(text).c_str());
  std::fflush(stdout);
  return Status::Ok();
}

Status Supervisor::Run() {
  Phase("start");
  KF_RETURN_IF_ERROR(StartChild());
  if (!job_.lock_file.empty()) lock_ = std::make_unique<DeviceLockFile>(job_.lock_file);
  Phase("open", "open device");
  Result<Message> opened = Call("open device", {{"op", "open"}});
  if (!opened.ok()) return Finish();
  result_["fingerprint"] = opened->head["fingerprint"];
  result_["llc_bytes"] = opened->head["llc_bytes"];
  result_["shared_region_pinned"] = opened->head.value("shared_region_pinned", false);
  if (job_.peaks) {
    Stage("peaks");
    Result<Message> p = Call("peaks", {{"op", "peaks"}});
    if (p.ok()) result_["peaks"] = p->head["peaks"];
    return Finish();
  }
  Phase("upload", "upload");
  Result<Message> alloc = Call("upload", {{"op", "alloc"}});
  if (!alloc.ok()) return Finish();
  result_["input_hashes"] = alloc->head["input_hashes"];
  if (job_.timing) {
    Phase("calibration", "calibration");
    KF_RETURN_IF_ERROR(Calibrate());
    if (failed_) return Finish();
    Phase("upload");
    if (job_.timing->fresh_inputs && !Call("upload", {{"op", "reupload"}, {"sets", job_.timing->sets}}).ok()) return Finish();
  }
  Phase("load", "load");
  if (!Call("load", {{"op", "load"}}).ok()) return Finish();
  KF_RETURN_IF_ERROR(Save());
  Phase("checks");
  KF_RETURN_IF_ERROR(Checks());
  if (!failed_ && job_.timing) KF_RETURN_IF_ERROR(Timing());
  Phase("precision");
  if (!failed_) {
    Result<Message> p = Call("precision", {{"op", "precision"}});
    if (p.ok()) result_["precision"] = p->head["precision"];
  }
  return Finish();
}

}  // namespace

Status RunJob(const Job& job, const fs::path& dir) {
  for (const InputSet& s : job.sets)
    if (OutputBytes(s) > (uint64_t{1} << 40)) return Status::InvalidArgument("outputs too large");
  if (job.timing && job.timing->sets.empty()) return Status::InvalidArgument("a timing plan needs at least one set");
  return Supervisor(job, dir).Run();
}

Status ProbeBackend(const std::string& name, int device) {
  const BackendSpec* backend = FindBackend(name);
  if (!backend) return Status::InvalidArgument("unknown backend '" + name + "'; known: " + BackendNames());
  json out = {{"backend", name}};
  const DeviceFactory* factory = FindDeviceFactory(name);
  if (!factory) {
    out["error"] = "backend " + name + " runs in the Python worker (python/kforge_pyworker.py), not in kforge-worker";
    std::cout << out.dump() << std::endl;
    return Status::Ok();
  }
  Result<std::vector<std::string>> devices = factory->list_devices();
  if (!devices.ok()) {
    out["error"] = devices.status().message();
  } else {
    out["devices"] = *devices;
    Result<std::unique_ptr<Device>> dev = factory->open(device);
    if (dev.ok()) {
      out["fingerprint"] = (*dev)->Fingerprint();
      Result<TheoreticalPeaks> peaks = (*dev)->ComputeTheoreticalPeaks();
      if (peaks.ok()) out["theoretical_peaks"] = TheoreticalPeaksToJson(*peaks);
      else out["theoretical_peaks_error"] = peaks.status().message();
    } else {
      out["error"] = dev.status().message();
    }
  }
  std::cout << out.dump() << std::endl;
  return Status::Ok();
}

}  // namespace kforge
