// Vulkan as a kforge device. One logical device with one compute queue; every operation is one
// command buffer, submitted and waited for with a fence. A launch records two timestamp
// queries around everything the candidate records, so the device time is the queue's own clock.
#include "backend/vulkan/vulkan_device.h"
#include "backend/devices.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>

#include "abi/kforge_vulkan.h"
#include "backend/cpp/cache_flush.h"
#include "backend/cpp/cpp_device.h"
#include "backend/host_args.h"
#include "backend/vulkan/vulkan_api.h"

// Vulkan structures are value-initialised from their sType ({VK_STRUCTURE_TYPE_...}), on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

// The ABI's opaque types (abi/kforge_vulkan.h) are defined here, in the global namespace.
struct kf_vk_buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize bytes = 0;
  void* mapped = nullptr;  // host-visible buffers: staging, and a CPU device's device buffers
  bool touched = true;     // written, read, filled or passed to a launch since the last flush
};
struct kf_vk_pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
};

namespace kforge {

namespace {

// kforge's peaks shader (peaks.comp), compiled to SPIR-V when kforge is built.
#include "backend/vulkan/peaks.spv.h"

constexpr uint32_t kMaxSets = 1024;               // dispatches per launch
constexpr int kPeakMode = 0, kPeakLocalSize = 1;  // peaks.comp's specialization constants

// SPIR-V: what the shader asks for that loosens IEEE float32 semantics (docs/abi-vulkan.md).
struct ShaderPrecision {
  int relaxed_precision = 0;  // RelaxedPrecision decorations (mediump / lowp)
  bool float16 = false;       // the Float16 capability
  bool float64 = false;       // the Float64 capability
};

ShaderPrecision ScanSpirv(const std::vector<uint32_t>& w) {
  constexpr uint32_t kOpCapability = 17, kOpDecorate = 71, kOpMemberDecorate = 72;
  constexpr uint32_t kCapFloat16 = 9, kCapFloat64 = 10, kDecorationRelaxedPrecision = 0;
  ShaderPrecision p;
  for (size_t i = 5; i < w.size();) {
    uint32_t op = w[i] & 0xffff, len = w[i] >> 16;
    if (len == 0 || i + len > w.size()) break;
    if (op == kOpCapability && len >= 2) {
      p.float16 |= w[i + 1] == kCapFloat16;
      p.float64 |= w[i + 1] == kCapFloat64;
    }
    if (op == kOpDecorate && len >= 3 && w[i + 2] == kDecorationRelaxedPrecision)
      ++p.relaxed_precision;
    if (op == kOpMemberDecorate && len >= 4 && w[i + 3] == kDecorationRelaxedPrecision)
      ++p.relaxed_precision;
    i += len;
  }
  return p;
}

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string DeviceTypeName(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete gpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

std::string VersionText(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

using RunFn = int (*)(const kf_vk_args*);
using ScratchFn = int64_t (*)(const kf_vk_args*);
using SpirvFn = const uint32_t* (*)(uint64_t* words);

class VulkanDevice : public Device {
 public:
  VulkanDevice(const VulkanApi* vk, VkPhysicalDevice phys) : vk_(vk), phys_(phys) {}
  ~VulkanDevice() override;
  Status Init();

  nlohmann::json Fingerprint() override;
  int64_t LastLevelCacheBytes() override;
  Result<BufferId> Alloc(size_t bytes) override;
  Status Write(BufferId b, const void* src, size_t bytes) override;
  Status Read(BufferId b, void* dst, size_t bytes) override;
  Status Fill(BufferId b, const void* pattern, size_t pattern_bytes, size_t bytes) override;
  Status FlushCaches() override;
  Status Synchronize() override {
    return Check(vk_->vkDeviceWaitIdle(device_), "vkDeviceWaitIdle");
  }
  Status Load(const KernelSpec& spec) override;
  Result<int64_t> ScratchBytes(const LaunchArgs& args) override;
  Result<LaunchTiming> Launch(const LaunchArgs& args) override;
  nlohmann::json PrecisionReport() override;
  Result<Peaks> MeasurePeaks() override;
  Result<TheoreticalPeaks> ComputeTheoreticalPeaks() override;

  // The ABI's callbacks land here.
  kf_vk_pipeline* GetPipeline(VkShaderModule module, const uint32_t* spec, int32_t n_spec);
  kf_vk_pipeline* CandidatePipeline(const uint32_t* spec, int32_t n_spec);
  int RecordDispatch(kf_vk_pipeline* p, kf_vk_buffer* const* buffers, int32_t n, const void* push,
                     int32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz);
  int RecordFill(kf_vk_buffer* b, int64_t bytes, uint32_t value);

 private:
  struct VkArgs;  // kf_vk_args plus the arrays it points into
  Status Check(VkResult r, const char* what) {
    return r == VK_SUCCESS ? Status::Ok()
                           : Status::Unavailable(std::string(what) + " failed: " + VkResultName(r));
  }
  int Fail(const std::string& message) {
    std::snprintf(error_, sizeof(error_), "%s", message.c_str());
    return 1;
  }
  bool IsCpu() const { return props_.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  Result<uint32_t> MemoryType(uint32_t type_bits, VkMemoryPropertyFlags required,
                              VkMemoryPropertyFlags preferred);
  Result<std::unique_ptr<kf_vk_buffer>> NewBuffer(VkDeviceSize bytes, bool host_visible);
  void DestroyBuffer(kf_vk_buffer* b);
  Status EnsureStaging(size_t bytes);
  void Barrier();
  // Records `record` into the command buffer, submits it and waits.
  Status Submit(const std::function<Status()>& record);
  Result<double> ReadTimestamps();
  void MakeArgs(const LaunchArgs& args, VkArgs* out);
  Result<double> TimePeak(kf_vk_pipeline* p, std::vector<kf_vk_buffer*> buffers, const void* push,
                          uint32_t groups);
  Result<double> PeakBandwidth();
  Result<double> PeakFma();

  const VulkanApi* vk_;
  VkPhysicalDevice phys_;
  VkPhysicalDeviceProperties props_{};
  VkPhysicalDeviceSubgroupProperties subgroup_{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceMemoryProperties memory_{};
  uint32_t queue_family_ = 0;
  uint32_t timestamp_bits_ = 0;  // 0: the queue has no timestamps; the host clock stands in
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptors_ = VK_NULL_HANDLE;
  std::unique_ptr<kf_vk_buffer> dummy_, staging_, flush_;
  uint32_t flush_value_ = 0;
  size_t fill_bytes_ = 0;  // the flush's fill where lines are not evicted, set at the first flush
  std::vector<std::unique_ptr<kf_vk_buffer>> buffers_;
  VkShaderModule shader_ = VK_NULL_HANDLE, peaks_shader_ = VK_NULL_HANDLE;
  std::map<std::pair<VkShaderModule, std::vector<uint32_t>>, std::unique_ptr<kf_vk_pipeline>>
      pipelines_;
  std::vector<std::vector<uint32_t>> spec_seen_;  // the candidate's specialization sets, in order
  ShaderPrecision precision_;
  bool recording_ = false;  // dispatch() and fill() are valid only inside a launch
  RunFn run_ = nullptr;
  ScratchFn scratch_ = nullptr;
  char error_[16384] = {};
};

struct VulkanDevice::VkArgs {
  std::vector<kf_vk_tensor> inputs, outputs;
  std::vector<kf_attr> attrs;
  kf_vk_args args{};
};

kf_vk_pipeline* PipelineCallback(const kf_vk_args* self, const uint32_t* spec, int32_t n_spec) {
  return static_cast<VulkanDevice*>(self->host)->CandidatePipeline(spec, n_spec);
}
int DispatchCallback(const kf_vk_args* self, kf_vk_pipeline* p, kf_vk_buffer* const* buffers,
                     int32_t n, const void* push, int32_t push_bytes, uint32_t gx, uint32_t gy,
                     uint32_t gz) {
  return static_cast<VulkanDevice*>(self->host)
      ->RecordDispatch(p, buffers, n, push, push_bytes, gx, gy, gz);
}
int FillCallback(const kf_vk_args* self, kf_vk_buffer* b, int64_t bytes, uint32_t value) {
  return static_cast<VulkanDevice*>(self->host)->RecordFill(b, bytes, value);
}

VulkanDevice::~VulkanDevice() {
  if (!device_) return;
  vk_->vkDeviceWaitIdle(device_);
  for (auto& [key, p] : pipelines_) vk_->vkDestroyPipeline(device_, p->pipeline, nullptr);
  if (shader_) vk_->vkDestroyShaderModule(device_, shader_, nullptr);
  if (peaks_shader_) vk_->vkDestroyShaderModule(device_, peaks_shader_, nullptr);
  for (auto& b : buffers_) DestroyBuffer(b.get());
  for (auto* b : {dummy_.get(), staging_.get(), flush_.get()})
    if (b) DestroyBuffer(b);
  if (descriptors_) vk_->vkDestroyDescriptorPool(device_, descriptors_, nullptr);
  if (layout_) vk_->vkDestroyPipelineLayout(device_, layout_, nullptr);
  if (set_layout_) vk_->vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  if (queries_) vk_->vkDestroyQueryPool(device_, queries_, nullptr);
  if (fence_) vk_->vkDestroyFence(device_, fence_, nullptr);
  if (pool_) vk_->vkDestroyCommandPool(device_, pool_, nullptr);
  vk_->vkDestroyDevice(device_, nullptr);
}

Status VulkanDevice::Init() {
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &subgroup_;
  vk_->vkGetPhysicalDeviceProperties2(phys_, &p2);
  props_ = p2.properties;
  vk_->vkGetPhysicalDeviceMemoryProperties(phys_, &memory_);
  uint32_t n = 0;
  vk_->vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vk_->vkGetPhysicalDeviceQueueFamilyProperties(phys_, &n, families.data());
  bool found = false;
  for (uint32_t i = 0; i < n && !found; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    found = true;
    queue_family_ = i;
    timestamp_bits_ = families[i].timestampValidBits;
  }
  if (!found)
    return Status::Unavailable(std::string("Vulkan device ") + props_.deviceName +
                               " has no compute queue");
  float priority = 1;
  VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  q.queueFamilyIndex = queue_family_;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  VkDeviceCreateInfo d{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  d.queueCreateInfoCount = 1;
  d.pQueueCreateInfos = &q;
  KF_RETURN_IF_ERROR(Check(vk_->vkCreateDevice(phys_, &d, nullptr, &device_), "vkCreateDevice"));
  vk_->vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  VkCommandPoolCreateInfo cp{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = queue_family_;
  KF_RETURN_IF_ERROR(
      Check(vk_->vkCreateCommandPool(device_, &cp, nullptr, &pool_), "vkCreateCommandPool"));
  VkCommandBufferAllocateInfo ca{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ca.commandPool = pool_;
  ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ca.commandBufferCount = 1;
  KF_RETURN_IF_ERROR(
      Check(vk_->vkAllocateCommandBuffers(device_, &ca, &cmd_), "vkAllocateCommandBuffers"));
  VkFenceCreateInfo f{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  KF_RETURN_IF_ERROR(Check(vk_->vkCreateFence(device_, &f, nullptr, &fence_), "vkCreateFence"));
  if (timestamp_bits_ > 0) {
    VkQueryPoolCreateInfo qp{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qp.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qp.queryCount = 2;
    KF_RETURN_IF_ERROR(
        Check(vk_->vkCreateQueryPool(device_, &qp, nullptr, &queries_), "vkCreateQueryPool"));
  }
  // One layout for every pipeline: KF_VK_MAX_BINDINGS storage buffers and the push constants.
  std::vector<VkDescriptorSetLayoutBinding> bindings(KF_VK_MAX_BINDINGS);
  for (uint32_t k = 0; k < KF_VK_MAX_BINDINGS; ++k)
    bindings[k] = {k, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo sl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sl.bindingCount = KF_VK_MAX_BINDINGS;
  sl.pBindings = bindings.data();
  KF_RETURN_IF_ERROR(Check(vk_->vkCreateDescriptorSetLayout(device_, &sl, nullptr, &set_layout_),
                           "vkCreateDescriptorSetLayout"));
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, KF_VK_MAX_PUSH_BYTES};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout_;
  pl.pushConstantRangeCount = 1;
  pl.pPushConstantRanges = &push;
  KF_RETURN_IF_ERROR(Check(vk_->vkCreatePipelineLayout(device_, &pl, nullptr, &layout_),
                           "vkCreatePipelineLayout"));
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kMaxSets * KF_VK_MAX_BINDINGS};
  VkDescriptorPoolCreateInfo dp{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dp.maxSets = kMaxSets;
  dp.poolSizeCount = 1;
  dp.pPoolSizes = &size;
  KF_RETURN_IF_ERROR(Check(vk_->vkCreateDescriptorPool(device_, &dp, nullptr, &descriptors_),
                           "vkCreateDescriptorPool"));
  KF_ASSIGN_OR_RETURN(dummy_, NewBuffer(256, false));
  if (sizeof(kf_vk_peaks_spirv) <= sizeof(uint32_t)) return Status::Ok();  // built without glslangValidator
  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sm.codeSize = sizeof(kf_vk_peaks_spirv);
  sm.pCode = kf_vk_peaks_spirv;
  return Check(vk_->vkCreateShaderModule(device_, &sm, nullptr, &peaks_shader_),
               "vkCreateShaderModule (peaks)");
}

nlohmann::json VulkanDevice::Fingerprint() {
  nlohmann::json j = {
      {"kind", IsCpu() ? "vulkan-cpu" : "gpu"},
      {"name", props_.deviceName},
      {"device_type", DeviceTypeName(props_.deviceType)},
      {"vendor_id", props_.vendorID},
      {"device_id", props_.deviceID},
      {"driver_version", props_.driverVersion},
      {"api_version", VersionText(props_.apiVersion)},
      {"subgroup_size", subgroup_.subgroupSize},
      {"timestamp_valid_bits", timestamp_bits_},
      {"timestamp_period_ns", props_.limits.timestampPeriod},
      {"device_timer", timestamp_bits_ > 0 ? "timestamp queries"
                                           : "host clock (the compute queue has no timestamps)"},
  };
  if (IsCpu()) {
    j["host"] = HostCpuFingerprint();
    // How FlushCaches empties the caches (docs/evaluation.md, "How kforge's backends apply the gates").
    bool mapped = memory_.memoryTypeCount > 0;  // every type host-visible: every buffer is mapped (NewBuffer)
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
      mapped = mapped && (memory_.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
    j["cache_flush"] = LineEvictionAvailable() && mapped ? "touched buffers' lines evicted (mapped memory)" : "fill";
  }
  return j;
}

// Vulkan reports no cache sizes. A CPU device (lavapipe) shares the host's last-level cache;
// for a GPU the size is unknown (0) and the flush falls back to a fixed 256 MB.
int64_t VulkanDevice::LastLevelCacheBytes() { return IsCpu() ? HostLastLevelCacheBytes() : 0; }

Result<uint32_t> VulkanDevice::MemoryType(uint32_t type_bits, VkMemoryPropertyFlags required,
                                          VkMemoryPropertyFlags preferred) {
  int best = -1;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
    if (!(type_bits & (1u << i)) || (f & required) != required) continue;
    if (best < 0 || ((f & preferred) == preferred &&
                     (memory_.memoryTypes[best].propertyFlags & preferred) != preferred))
      best = static_cast<int>(i);
  }
  if (best < 0)
    return Status::Unavailable("no Vulkan memory type with the properties a buffer needs");
  return static_cast<uint32_t>(best);
}

// Device buffers prefer device-local memory; staging buffers are host-visible and coherent.
Result<std::unique_ptr<kf_vk_buffer>> VulkanDevice::NewBuffer(VkDeviceSize bytes,
                                                              bool host_visible) {
  auto b = std::make_unique<kf_vk_buffer>();
  b->bytes = std::max<VkDeviceSize>((bytes + 15) / 16 * 16, 64);  // fills need multiples of 4
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = b->bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  KF_RETURN_IF_ERROR(
      Check(vk_->vkCreateBuffer(device_, &info, nullptr, &b->buffer), "vkCreateBuffer"));
  VkMemoryRequirements req;
  vk_->vkGetBufferMemoryRequirements(device_, b->buffer, &req);
  VkMemoryPropertyFlags required =
      host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : 0;
  VkMemoryPropertyFlags preferred =
      host_visible ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  Result<uint32_t> type = MemoryType(req.memoryTypeBits, required, preferred);
  if (!type.ok()) {
    DestroyBuffer(b.get());
    return type.status();
  }
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = *type;
  VkResult r = vk_->vkAllocateMemory(device_, &alloc, nullptr, &b->memory);
  if (r == VK_SUCCESS) r = vk_->vkBindBufferMemory(device_, b->buffer, b->memory, 0);
  // A CPU device's (lavapipe's) memory is host memory: mapped, so that the flush can evict
  // its lines (FlushCaches). A mapping is the memory itself, not a copy (vkMapMemory).
  const bool map = host_visible ||
                   (IsCpu() && (memory_.memoryTypes[*type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT));
  if (r == VK_SUCCESS && map)
    r = vk_->vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
  if (r != VK_SUCCESS) {
    DestroyBuffer(b.get());
    return Status::Unavailable("cannot allocate " + std::to_string(bytes) +
                               " bytes of Vulkan memory: " + VkResultName(r));
  }
  return b;
}

void VulkanDevice::DestroyBuffer(kf_vk_buffer* b) {
  if (b->buffer) vk_->vkDestroyBuffer(device_, b->buffer, nullptr);
  if (b->memory) vk_->vkFreeMemory(device_, b->memory, nullptr);  // unmaps too
  b->buffer = VK_NULL_HANDLE;
  b->memory = VK_NULL_HANDLE;
}

Result<BufferId> VulkanDevice::Alloc(size_t bytes) {
  KF_ASSIGN_OR_RETURN(std::unique_ptr<kf_vk_buffer> b, NewBuffer(bytes, false));
  buffers_.push_back(std::move(b));
  return static_cast<BufferId>(buffers_.size() - 1);
}

Status VulkanDevice::EnsureStaging(size_t bytes) {
  if (staging_ && staging_->bytes >= bytes) return Status::Ok();
  if (staging_) DestroyBuffer(staging_.get());
  KF_ASSIGN_OR_RETURN(staging_, NewBuffer(bytes, true));
  return Status::Ok();
}

// A full memory barrier: every earlier command's writes are visible to every later command,
// transfers and the host included (a submission's fence alone makes nothing visible).
void VulkanDevice::Barrier() {
  VkMemoryBarrier m{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  m.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_MEMORY_READ_BIT;
  m.dstAccessMask =
      VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_HOST_READ_BIT;
  vk_->vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                            VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                            &m, 0, nullptr, 0, nullptr);
}

Status VulkanDevice::Submit(const std::function<Status()>& record) {
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  KF_RETURN_IF_ERROR(Check(vk_->vkBeginCommandBuffer(cmd_, &begin), "vkBeginCommandBuffer"));
  Barrier();
  Status recorded = record();
  Barrier();
  KF_RETURN_IF_ERROR(Check(vk_->vkEndCommandBuffer(cmd_), "vkEndCommandBuffer"));
  KF_RETURN_IF_ERROR(recorded);  // recorded but never submitted; the next begin resets it
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd_;
  KF_RETURN_IF_ERROR(Check(vk_->vkQueueSubmit(queue_, 1, &submit, fence_), "vkQueueSubmit"));
  VkResult r = vk_->vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX);
  vk_->vkResetFences(device_, 1, &fence_);
  return Check(r, "vkWaitForFences (the queue failed)");
}

Status VulkanDevice::Write(BufferId b, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  KF_RETURN_IF_ERROR(EnsureStaging(bytes));
  std::memcpy(staging_->mapped, src, bytes);
  buffers_[b]->touched = true;
  return Submit([&] {
    VkBufferCopy c{0, 0, bytes};
    vk_->vkCmdCopyBuffer(cmd_, staging_->buffer, buffers_[b]->buffer, 1, &c);
    return Status::Ok();
  });
}

Status VulkanDevice::Read(BufferId b, void* dst, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  KF_RETURN_IF_ERROR(EnsureStaging(bytes));
  buffers_[b]->touched = true;
  KF_RETURN_IF_ERROR(Submit([&] {
    VkBufferCopy c{0, 0, bytes};
    vk_->vkCmdCopyBuffer(cmd_, buffers_[b]->buffer, staging_->buffer, 1, &c);
    return Status::Ok();
  }));
  std::memcpy(dst, staging_->mapped, bytes);
  return Status::Ok();
}

// 1-, 2- and 4-byte patterns over a multiple of 4 bytes go through vkCmdFillBuffer; anything
// else (8-byte patterns, odd lengths) is written on the host and copied.
Status VulkanDevice::Fill(BufferId b, const void* pattern, size_t pattern_bytes, size_t bytes) {
  size_t whole = bytes / pattern_bytes * pattern_bytes;
  if (whole == 0) return Status::Ok();
  buffers_[b]->touched = true;
  if (pattern_bytes <= 4 && whole % 4 == 0) {
    uint32_t word = 0;
    for (size_t k = 0; k < 4; k += pattern_bytes)
      std::memcpy(reinterpret_cast<char*>(&word) + k, pattern, pattern_bytes);
    return Submit([&] {
      vk_->vkCmdFillBuffer(cmd_, buffers_[b]->buffer, 0, whole, word);
      return Status::Ok();
    });
  }
  KF_RETURN_IF_ERROR(EnsureStaging(whole));
  FillPattern(staging_->mapped, pattern, pattern_bytes, whole);
  return Submit([&] {
    VkBufferCopy c{0, 0, whole};
    vk_->vkCmdCopyBuffer(cmd_, staging_->buffer, buffers_[b]->buffer, 1, &c);
    return Status::Ok();
  });
}

// A GPU: a fill of 256 MB (Vulkan reports no cache size). A CPU device (lavapipe): with
// clflushopt and every touched buffer mapped, their lines evicted and 2 x the private caches
// filled (cpp/cache_flush.h); else a fill of max(2 x the host's LLC, 64 MiB).
Status VulkanDevice::FlushCaches() {
  if (fill_bytes_ == 0)
    fill_bytes_ = static_cast<size_t>(std::max<int64_t>(2 * LastLevelCacheBytes(), IsCpu() ? 64 << 20 : 256 << 20));
  size_t touched = 0;
  bool mapped = true;
  for (const auto& b : buffers_) {
    if (!b->touched) continue;
    touched += b->bytes;
    mapped = mapped && b->mapped;
  }
  const FlushPlan plan = PlanFlush(touched, IsCpu() && mapped, fill_bytes_);
  const size_t bytes = plan.overwrite_bytes;
  if (!flush_ || flush_->bytes < bytes) {
    if (flush_) DestroyBuffer(flush_.get());
    KF_ASSIGN_OR_RETURN(flush_, NewBuffer(bytes, false));
  }
  ++flush_value_;
  KF_RETURN_IF_ERROR(Submit([&] {
    vk_->vkCmdFillBuffer(cmd_, flush_->buffer, 0, (bytes + 3) / 4 * 4, flush_value_);
    return Status::Ok();
  }));
  for (const auto& b : buffers_) {
    if (plan.method == FlushMethod::kEvictLines && b->touched) EvictLines(b->mapped, b->bytes);
    b->touched = false;
  }
  return Status::Ok();
}

Status VulkanDevice::Load(const KernelSpec& spec) {
  void* lib = dlopen(spec.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return Status::InvalidArgument(std::string("cannot load candidate: ") + dlerror());
  run_ = reinterpret_cast<RunFn>(dlsym(lib, spec.entry.c_str()));
  if (!run_)
    return Status::InvalidArgument("candidate exports no function '" + spec.entry +
                                   "'; declare it extern \"C\" (see kforge_vulkan.h)");
  scratch_ = reinterpret_cast<ScratchFn>(dlsym(lib, "kf_vk_scratch_bytes"));
  auto spirv = reinterpret_cast<SpirvFn>(dlsym(lib, "kf_vk_spirv"));
  if (!spirv)
    return Status::InvalidArgument(
        "the candidate has no compute shader: put its GLSL in a file beside the host file "
        "with the same stem and the extension .comp (see docs/abi-vulkan.md)");
  uint64_t words = 0;
  const uint32_t* code = spirv(&words);
  std::vector<uint32_t> module(code, code + words);
  precision_ = ScanSpirv(module);
  VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  sm.codeSize = module.size() * 4;
  sm.pCode = module.data();
  VkResult r = vk_->vkCreateShaderModule(device_, &sm, nullptr, &shader_);
  if (r != VK_SUCCESS)
    return Status::InvalidArgument("the driver refused the shader's SPIR-V: " + VkResultName(r));
  return Status::Ok();
}

kf_vk_pipeline* VulkanDevice::GetPipeline(VkShaderModule module, const uint32_t* spec,
                                          int32_t n_spec) {
  if (n_spec < 0 || n_spec > KF_VK_MAX_SPEC_CONSTANTS || (n_spec > 0 && !spec)) {
    Fail("pipeline(): n_spec must be 0.." + std::to_string(KF_VK_MAX_SPEC_CONSTANTS) +
         " with spec non-NULL");
    return nullptr;
  }
  std::vector<uint32_t> values(spec, spec + n_spec);
  auto key = std::make_pair(module, values);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second.get();
  std::vector<VkSpecializationMapEntry> entries;
  for (uint32_t k = 0; k < static_cast<uint32_t>(n_spec); ++k) entries.push_back({k, 4 * k, 4});
  VkSpecializationInfo si{static_cast<uint32_t>(entries.size()), entries.data(), values.size() * 4,
                          values.data()};
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = n_spec > 0 ? &si : nullptr;
  info.layout = layout_;
  auto p = std::make_unique<kf_vk_pipeline>();
  VkResult r =
      vk_->vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &info, nullptr, &p->pipeline);
  if (r != VK_SUCCESS) {
    Fail("vkCreateComputePipelines failed: " + VkResultName(r));
    return nullptr;
  }
  if (module == shader_) spec_seen_.push_back(values);
  return pipelines_.emplace(key, std::move(p)).first->second.get();
}

kf_vk_pipeline* VulkanDevice::CandidatePipeline(const uint32_t* spec, int32_t n_spec) {
  if (!shader_) {
    Fail("pipeline(): no shader is loaded");
    return nullptr;
  }
  return GetPipeline(shader_, spec, n_spec);
}

int VulkanDevice::RecordDispatch(kf_vk_pipeline* p, kf_vk_buffer* const* buffers, int32_t n,
                                 const void* push, int32_t push_bytes, uint32_t gx, uint32_t gy,
                                 uint32_t gz) {
  const VkPhysicalDeviceLimits& lim = props_.limits;
  if (!recording_) return Fail("dispatch() is valid only inside kf_vk_run");
  if (!p) return Fail("dispatch(): pipeline is NULL (pipeline() failed?)");
  if (n < 0 || n > KF_VK_MAX_BINDINGS || (n > 0 && !buffers))
    return Fail("dispatch(): n_buffers must be 0.." + std::to_string(KF_VK_MAX_BINDINGS));
  if (push_bytes < 0 || push_bytes > KF_VK_MAX_PUSH_BYTES || push_bytes % 4 != 0 ||
      (push_bytes > 0 && !push))
    return Fail("dispatch(): push_bytes must be a multiple of 4 in 0.." +
                std::to_string(KF_VK_MAX_PUSH_BYTES));
  if (gx > lim.maxComputeWorkGroupCount[0] || gy > lim.maxComputeWorkGroupCount[1] ||
      gz > lim.maxComputeWorkGroupCount[2])
    return Fail("dispatch(): " + std::to_string(gx) + " x " + std::to_string(gy) + " x " +
                std::to_string(gz) + " work-groups exceed the device's maxComputeWorkGroupCount (" +
                std::to_string(lim.maxComputeWorkGroupCount[0]) + ", " +
                std::to_string(lim.maxComputeWorkGroupCount[1]) + ", " +
                std::to_string(lim.maxComputeWorkGroupCount[2]) + ")");
  if (gx == 0 || gy == 0 || gz == 0) return 0;  // nothing to run
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  alloc.descriptorPool = descriptors_;
  alloc.descriptorSetCount = 1;
  alloc.pSetLayouts = &set_layout_;
  VkResult r = vk_->vkAllocateDescriptorSets(device_, &alloc, &set);
  if (r != VK_SUCCESS)
    return Fail("dispatch(): more than " + std::to_string(kMaxSets) + " dispatches in one call (" +
                VkResultName(r) + ")");
  VkDescriptorBufferInfo infos[KF_VK_MAX_BINDINGS];
  VkWriteDescriptorSet writes[KF_VK_MAX_BINDINGS];
  for (int k = 0; k < KF_VK_MAX_BINDINGS; ++k) {
    kf_vk_buffer* b = k < n && buffers[k] ? buffers[k] : dummy_.get();
    if (b->bytes > lim.maxStorageBufferRange)
      return Fail("dispatch(): binding " + std::to_string(k) + " holds " +
                  std::to_string(b->bytes) +
                  " bytes, more than the device's maxStorageBufferRange (" +
                  std::to_string(lim.maxStorageBufferRange) + ")");
    infos[k] = {b->buffer, 0, VK_WHOLE_SIZE};
    writes[k] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[k].dstSet = set;
    writes[k].dstBinding = static_cast<uint32_t>(k);
    writes[k].descriptorCount = 1;
    writes[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[k].pBufferInfo = &infos[k];
  }
  vk_->vkUpdateDescriptorSets(device_, KF_VK_MAX_BINDINGS, writes, 0, nullptr);
  Barrier();
  vk_->vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
  vk_->vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set, 0,
                               nullptr);
  if (push_bytes > 0)
    vk_->vkCmdPushConstants(cmd_, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                            static_cast<uint32_t>(push_bytes), push);
  vk_->vkCmdDispatch(cmd_, gx, gy, gz);
  return 0;
}

int VulkanDevice::RecordFill(kf_vk_buffer* b, int64_t bytes, uint32_t value) {
  if (!recording_) return Fail("fill() is valid only inside kf_vk_run");
  if (!b) return Fail("fill(): buffer is NULL");
  if (bytes < 0 || bytes % 4 != 0 || static_cast<VkDeviceSize>(bytes) > b->bytes)
    return Fail("fill(): bytes must be a multiple of 4 within the buffer (" +
                std::to_string(b->bytes) + " bytes)");
  if (bytes == 0) return 0;
  Barrier();
  vk_->vkCmdFillBuffer(cmd_, b->buffer, 0, static_cast<VkDeviceSize>(bytes), value);
  return 0;
}

void VulkanDevice::MakeArgs(const LaunchArgs& a, VkArgs* out) {
  auto tensor = [this](const LaunchTensor& t) {
    kf_vk_tensor k{};
    FillAbiTensor(t, &k);
    k.buf = t.buffer < 0 ? nullptr : buffers_[t.buffer].get();
    if (k.buf) k.buf->touched = true;
    return k;
  };
  for (const LaunchTensor& t : a.inputs) out->inputs.push_back(tensor(t));
  for (const LaunchTensor& t : a.outputs) out->outputs.push_back(tensor(t));
  out->attrs = MakeAbiAttrs(a.attrs);
  kf_vk_args& c = out->args;
  c.abi_version = KF_ABI_VERSION;
  c.n_inputs = static_cast<int32_t>(out->inputs.size());
  c.inputs = out->inputs.data();
  c.n_outputs = static_cast<int32_t>(out->outputs.size());
  c.outputs = out->outputs.data();
  c.n_attrs = static_cast<int32_t>(out->attrs.size());
  c.attrs = out->attrs.data();
  c.scratch = a.scratch < 0 ? nullptr : buffers_[a.scratch].get();
  if (c.scratch) c.scratch->touched = true;
  c.scratch_bytes = a.scratch_bytes;
  const VkPhysicalDeviceLimits& lim = props_.limits;
  c.limits.subgroup_size = subgroup_.subgroupSize;
  c.limits.max_workgroup_invocations = lim.maxComputeWorkGroupInvocations;
  c.limits.max_shared_bytes = lim.maxComputeSharedMemorySize;
  for (int k = 0; k < 3; ++k) {
    c.limits.max_workgroup_size[k] = lim.maxComputeWorkGroupSize[k];
    c.limits.max_workgroup_count[k] = lim.maxComputeWorkGroupCount[k];
  }
  c.pipeline = PipelineCallback;
  c.dispatch = DispatchCallback;
  c.fill = FillCallback;
  c.error = error_;
  c.error_capacity = sizeof(error_);
  c.host = this;
}

Result<int64_t> VulkanDevice::ScratchBytes(const LaunchArgs& args) {
  if (!scratch_) return int64_t{0};
  VkArgs c;
  MakeArgs(args, &c);
  int64_t n = scratch_(&c.args);
  if (n < 0 || n > (int64_t{64} << 30))
    return Status::InvalidArgument("kf_vk_scratch_bytes returned " + std::to_string(n));
  return n;
}

// Device milliseconds between the two timestamps of the last submission, masked to the
// queue's valid bits and scaled by timestampPeriod (nanoseconds per tick).
Result<double> VulkanDevice::ReadTimestamps() {
  if (!queries_) return Status::Unavailable("the compute queue has no timestamps");
  uint64_t t[2] = {0, 0};
  VkResult r = vk_->vkGetQueryPoolResults(device_, queries_, 0, 2, sizeof(t), t, sizeof(uint64_t),
                                          VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (r != VK_SUCCESS)
    return Status::Unavailable("vkGetQueryPoolResults failed: " + VkResultName(r));
  uint64_t mask = timestamp_bits_ >= 64 ? ~uint64_t{0} : (uint64_t{1} << timestamp_bits_) - 1;
  uint64_t ticks = ((t[1] & mask) - (t[0] & mask)) & mask;  // wraps once at most
  return ticks * static_cast<double>(props_.limits.timestampPeriod) * 1e-6;
}

Result<LaunchTiming> VulkanDevice::Launch(const LaunchArgs& args) {
  VkArgs c;
  MakeArgs(args, &c);
  error_[0] = '\0';
  KF_RETURN_IF_ERROR(
      Check(vk_->vkResetDescriptorPool(device_, descriptors_, 0), "vkResetDescriptorPool"));
  int rc = 0;
  double h0 = NowMs();
  Status s = Submit([&] {
    if (queries_) {
      vk_->vkCmdResetQueryPool(cmd_, queries_, 0, 2);
      vk_->vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, 0);
    }
    recording_ = true;
    rc = run_ ? run_(&c.args) : 0;  // nothing loaded: a null run (the worker's calibration)
    recording_ = false;
    if (rc != 0)
      return Status::InvalidArgument("kf_vk_run returned " + std::to_string(rc) +
                                     (error_[0] ? std::string(": ") + error_ : std::string()));
    if (queries_) {
      Barrier();
      vk_->vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 1);
    }
    return Status::Ok();
  });
  double h1 = NowMs();
  KF_RETURN_IF_ERROR(s);
  Result<double> device_ms = ReadTimestamps();
  return LaunchTiming{device_ms.ok() ? *device_ms : h1 - h0, h1 - h0};
}

nlohmann::json VulkanDevice::PrecisionReport() {
  nlohmann::json fast = nlohmann::json::array();
  if (precision_.relaxed_precision > 0) fast.push_back("RelaxedPrecision (mediump/lowp)");
  return {{"shader", "GLSL compiled by glslangValidator (SPIR-V for Vulkan 1.1)"},
          {"relaxed_precision_decorations", precision_.relaxed_precision},
          {"float16_capability", precision_.float16},
          {"float64_capability", precision_.float64},
          {"specialization_constants", spec_seen_},
          {"fast_math_options", fast}};
}

// One timed dispatch of a peaks pipeline: timestamps, or the host clock without them.
Result<double> VulkanDevice::TimePeak(kf_vk_pipeline* p, std::vector<kf_vk_buffer*> buffers,
                                      const void* push, uint32_t groups) {
  KF_RETURN_IF_ERROR(
      Check(vk_->vkResetDescriptorPool(device_, descriptors_, 0), "vkResetDescriptorPool"));
  double h0 = NowMs();
  KF_RETURN_IF_ERROR(Submit([&] {
    if (queries_) {
      vk_->vkCmdResetQueryPool(cmd_, queries_, 0, 2);
      vk_->vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, 0);
    }
    recording_ = true;
    int rc = RecordDispatch(p, buffers.data(), static_cast<int32_t>(buffers.size()), push, 16,
                            groups, 1, 1);
    recording_ = false;
    if (rc != 0) return Status::Unavailable(std::string("peaks dispatch: ") + error_);
    if (queries_) {
      Barrier();
      vk_->vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 1);
    }
    return Status::Ok();
  }));
  double h1 = NowMs();
  Result<double> ms = ReadTimestamps();
  return ms.ok() ? *ms : h1 - h0;
}

struct PeakPush {
  uint32_t n;
  int32_t iters;
  float a, b;
};

Result<double> VulkanDevice::PeakBandwidth() {
  size_t bytes = static_cast<size_t>(std::max<int64_t>(8 * LastLevelCacheBytes(), 256 << 20));
  bytes = std::min<size_t>(bytes, props_.limits.maxStorageBufferRange) / 16 * 16;
  // One vec4 per invocation where the group count allows (a grid-stride loop covers the rest):
  // on lavapipe, 64 groups looping over the buffer measured 0.7 GB/s where gelu reached 1.8.
  const uint32_t local = 256;
  const uint32_t groups = static_cast<uint32_t>(std::min<uint64_t>(
      (bytes / 16 + local - 1) / local, props_.limits.maxComputeWorkGroupCount[0]));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<kf_vk_buffer> src, NewBuffer(bytes, false));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<kf_vk_buffer> dst, NewBuffer(bytes, false));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<kf_vk_buffer> sums,
                      NewBuffer(uint64_t{groups} * local * 4, false));
  std::vector<kf_vk_buffer*> bound = {src.get(), dst.get(), sums.get()};
  KF_RETURN_IF_ERROR(Submit([&] {
    for (kf_vk_buffer* b : bound) vk_->vkCmdFillBuffer(cmd_, b->buffer, 0, VK_WHOLE_SIZE, 0);
    return Status::Ok();
  }));
  PeakPush push{static_cast<uint32_t>(bytes / 16), 0, 0, 0};
  double best = 0;
  for (int mode : {0, 2}) {  // copy (read + write bytes), read (read bytes)
    uint32_t spec[2] = {static_cast<uint32_t>(mode), local};
    kf_vk_pipeline* p = GetPipeline(peaks_shader_, spec, 2);
    if (!p) return Status::Unavailable(std::string("peaks pipeline: ") + error_);
    for (int rep = 0; rep < 6; ++rep) {
      KF_ASSIGN_OR_RETURN(double ms, TimePeak(p, bound, &push, groups));
      double moved = mode == 0 ? 2.0 * bytes : 1.0 * bytes;
      if (rep > 0 && ms > 0) best = std::max(best, moved / (ms * 1e-3) / 1e9);
    }
  }
  for (auto& b : {src.get(), dst.get(), sums.get()}) DestroyBuffer(b);
  return best;
}

Result<double> VulkanDevice::PeakFma() {
  const uint32_t local = 256, groups = IsCpu() ? 16 : 4096;
  const int iters = IsCpu() ? 256 : 4096;
  KF_ASSIGN_OR_RETURN(std::unique_ptr<kf_vk_buffer> sums, NewBuffer(groups * local * 4, false));
  uint32_t spec[2] = {1, local};
  kf_vk_pipeline* p = GetPipeline(peaks_shader_, spec, 2);
  if (!p) return Status::Unavailable(std::string("peaks pipeline: ") + error_);
  PeakPush push{0, iters, 0.999999f, 1e-7f};
  double best = 0;
  for (int rep = 0; rep < 4; ++rep) {
    KF_ASSIGN_OR_RETURN(double ms,
                        TimePeak(p, {dummy_.get(), dummy_.get(), sums.get()}, &push, groups));
    double flops = 2.0 * 16 * 4 * iters * static_cast<double>(groups) * local;
    if (rep > 0 && ms > 0) best = std::max(best, flops / (ms * 1e-3) / 1e9);
  }
  DestroyBuffer(sums.get());
  return best;
}

Result<Peaks> VulkanDevice::MeasurePeaks() {
  if (!peaks_shader_)
    return Status::Unavailable("kforge-worker was built without glslangValidator, so without the Vulkan peaks shader: "
                               "install glslang-tools and rebuild");
  Peaks p;
  KF_ASSIGN_OR_RETURN(p.bandwidth_gbs, PeakBandwidth());
  KF_ASSIGN_OR_RETURN(p.fp32_gflops, PeakFma());
  std::string timer =
      queries_ ? "timestamp queries" : "the host clock (no timestamps on the compute queue)";
  p.detail = {
      {"bandwidth",
       "max of copy (read+write bytes) and read (read bytes) in peaks.comp over up to 8x the cache "
       "(at most maxStorageBufferRange), best of 5 runs each, timed by " +
           timer},
      {"fp32",
       "best of 3 runs of the fma mode of peaks.comp: 16 vec4 FMA chains per invocation, timed "
       "by " +
           timer}};
  return p;
}

// A CPU device (lavapipe) runs on the host's cores, so it gets the host CPU's bound. Vulkan
// exposes neither a GPU's compute-unit count nor its clocks, so a GPU has no theoretical peaks
// here (the speed-of-light gate then has no floor for it: docs/evaluation.md).
Result<TheoreticalPeaks> VulkanDevice::ComputeTheoreticalPeaks() {
  if (!IsCpu())
    return Status::Unavailable(
        "Vulkan does not report a GPU's compute units or clocks, so kforge has no theoretical "
        "peaks for " +
        std::string(props_.deviceName));
  TheoreticalPeaks p = CpuTheoreticalPeaks(ReadHostCpuFacts());
  p.basis["vulkan_device"] = std::string(props_.deviceName) + " runs on the host CPU";
  return p;
}

}  // namespace

Result<std::vector<std::string>> ListVulkanDevices() {
  KF_ASSIGN_OR_RETURN(const VulkanApi* vk, LoadVulkan());
  KF_ASSIGN_OR_RETURN(std::vector<VkPhysicalDevice> devices, VulkanPhysicalDevices());
  std::vector<std::string> out;
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties p;
    vk->vkGetPhysicalDeviceProperties(d, &p);
    out.push_back(std::string(p.deviceName) + " (" + DeviceTypeName(p.deviceType) + ", Vulkan " +
                  VersionText(p.apiVersion) + ")");
  }
  return out;
}

Result<std::unique_ptr<Device>> NewVulkanDevice(int index) {
  KF_ASSIGN_OR_RETURN(const VulkanApi* vk, LoadVulkan());
  KF_ASSIGN_OR_RETURN(std::vector<VkPhysicalDevice> devices, VulkanPhysicalDevices());
  if (index < 0 || index >= static_cast<int>(devices.size()))
    return Status::NotFound("Vulkan device " + std::to_string(index) +
                            " does not exist; there are " + std::to_string(devices.size()) +
                            " (see `kforge doctor`)");
  auto dev = std::make_unique<VulkanDevice>(vk, devices[index]);
  KF_RETURN_IF_ERROR(dev->Init());
  return std::unique_ptr<Device>(std::move(dev));
}

// kforge-worker's factory for the vulkan backend (backend/devices.inc).
DeviceFactory VulkanDeviceFactory() { return {"vulkan", NewVulkanDevice, ListVulkanDevices}; }

}  // namespace kforge
