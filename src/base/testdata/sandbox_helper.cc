// Misbehaving programs for subprocess_test.cc, one per mode:
//   segv            dereferences a null pointer
//   abort           calls abort()
//   spin            burns CPU forever
//   oom             allocates and touches up to 16 GB in 64 MB chunks; exit 3 when refused
//   forkbomb        every process forks forever, printing "+" per successful fork
//   threads N       starts N sleeping threads; prints how many started, exit 0
//   fsize BYTES     writes BYTES zeros to ./big; prints "wrote" when it could
//   connect PORT    TCP connect to 127.0.0.1:PORT; exit 0 if connected, 1 (and why) if not
//   escape TOKEN    starts a grandchild in a session of its own that spins forever with TOKEN
//                   in its command line; prints "started" once it runs, exit 0
//   write PATH...   creates each file and writes a byte; prints "PATH: ok" or "PATH: EROFS"
//                   (the errno's name) per line; exit 0 if all were written, 1 if not
//   sockets         prints "inet=.. netlink=.. unix=.. pair=.." (ok or the errno's name)
//   ptrace          PTRACE_ATTACH to a child of its own and to its parent; prints
//                   "child=.. parent=.." (ok or the errno's name)
//   procs           prints the process ids /proc shows, space-separated
//   perf            perf_event_open on its own task clock; prints "perf=.." (ok or the errno)
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int Segv() {
  volatile int* null = nullptr;
  *null = 1;
  return 0;
}

int Spin() {
  volatile unsigned long counter = 0;
  for (;;) counter = counter + 1;
}

int Oom() {
  const size_t chunk = 64ull << 20;
  for (size_t total = 0; total < (16ull << 30); total += chunk) {
    volatile char* p = static_cast<volatile char*>(malloc(chunk));
    if (p == nullptr) {
      fprintf(stderr, "allocation refused after %zu MB\n", total >> 20);
      return 3;
    }
    for (size_t i = 0; i < chunk; i += 4096) p[i] = 1;
  }
  return 0;
}

int ForkBomb() {
  for (;;) {
    pid_t pid = fork();
    if (pid == 0) {
      ssize_t ignored = write(1, "+", 1);
      (void)ignored;
    } else if (pid < 0) {
      usleep(1000);  // contained: keep trying, gently
    }
  }
}

void* Sleeper(void*) {
  pause();
  return nullptr;
}

int Threads(int n) {
  int started = 0;
  for (int i = 0; i < n; ++i) {
    pthread_t thread;
    if (pthread_create(&thread, nullptr, Sleeper, nullptr) == 0) ++started;
  }
  printf("%d\n", started);
  fflush(stdout);
  _exit(0);
}

int WriteFile(long bytes) {
  FILE* f = fopen("big", "w");
  if (f == nullptr) return 2;
  static char block[4096];
  for (long i = 0; i < bytes; i += sizeof block) fwrite(block, 1, sizeof block, f);
  if (fclose(f) != 0) return 1;
  printf("wrote\n");
  return 0;
}

int Connect(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) {
    printf("socket: %s\n", strerror(errno));
    return 1;
  }
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    printf("connect: %s\n", strerror(errno));
    return 1;
  }
  printf("connected\n");
  return 0;
}

// A session of its own (out of the sandbox's process group), orphaned by its parent.
int Escape(const char* token) {
  int ready[2];
  if (pipe(ready) != 0) return 2;
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    if (fork() == 0) {
      ssize_t ignored = write(ready[1], "x", 1);
      (void)ignored;
      execl("/proc/self/exe", "sandbox_helper", "spin", token, static_cast<char*>(nullptr));
      Spin();
    }
    _exit(0);
  }
  char byte;
  if (read(ready[0], &byte, 1) != 1) return 3;
  usleep(100 * 1000);  // the grandchild is in exec or spinning by now
  printf("started\n");
  return 0;
}

const char* Outcome(int rc) { return rc >= 0 ? "ok" : strerrorname_np(errno); }

int Write(int argc, char** argv) {
  int failed = 0;
  for (int i = 2; i < argc; ++i) {
    int fd = open(argv[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0 && write(fd, "x", 1) != 1) fd = -1;
    printf("%s: %s\n", argv[i], Outcome(fd));
    failed += fd < 0;
    if (fd >= 0) close(fd);
  }
  return failed > 0 ? 1 : 0;
}

int Sockets() {
  const char* inet = Outcome(socket(AF_INET, SOCK_STREAM, 0));
  const char* netlink = Outcome(socket(AF_NETLINK, SOCK_RAW, 0));
  const char* unix_socket = Outcome(socket(AF_UNIX, SOCK_STREAM, 0));
  int pair[2];
  const char* unix_pair = Outcome(socketpair(AF_UNIX, SOCK_STREAM, 0, pair));
  printf("inet=%s netlink=%s unix=%s pair=%s\n", inet, netlink, unix_socket, unix_pair);
  return 0;
}

int Ptrace() {
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  const char* on_child = Outcome(static_cast<int>(ptrace(PTRACE_ATTACH, child, nullptr, nullptr)));
  const char* on_parent =
      Outcome(static_cast<int>(ptrace(PTRACE_ATTACH, getppid(), nullptr, nullptr)));
  printf("child=%s parent=%s\n", on_child, on_parent);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  return 0;
}

int Perf() {
  perf_event_attr attr = {};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.exclude_kernel = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  printf("perf=%s\n", Outcome(static_cast<int>(fd)));
  return 0;
}

int Procs() {
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return 2;
  for (dirent* entry; (entry = readdir(dir)) != nullptr;) {
    if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9') printf("%s ", entry->d_name);
  }
  closedir(dir);
  printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const long arg = argc > 2 ? atol(argv[2]) : 0;
  if (mode == "segv") return Segv();
  if (mode == "abort") abort();
  if (mode == "spin") return Spin();
  if (mode == "oom") return Oom();
  if (mode == "forkbomb") return ForkBomb();
  if (mode == "threads") return Threads(static_cast<int>(arg));
  if (mode == "fsize") return WriteFile(arg);
  if (mode == "connect") return Connect(static_cast<int>(arg));
  if (mode == "escape" && argc > 2) return Escape(argv[2]);
  if (mode == "write") return Write(argc, argv);
  if (mode == "sockets") return Sockets();
  if (mode == "ptrace") return Ptrace();
  if (mode == "procs") return Procs();
  if (mode == "perf") return Perf();
  fprintf(stderr,
          "usage: sandbox_helper segv|abort|spin|oom|forkbomb|threads N|fsize B|connect P|"
          "escape TOKEN|write PATH...|sockets|ptrace|procs|perf\n");
  return 64;
}
