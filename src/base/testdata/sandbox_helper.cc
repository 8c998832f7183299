// Misbehaving programs for subprocess_test.cc, one per mode:
//   segv            dereferences a null pointer
//   abort           calls abort()
//   spin            burns CPU forever
//   oom             allocates and touches up to 16 GB in 64 MB chunks; exit 3 when refused
//   forkbomb        every process forks forever, printing "+" per successful fork
//   threads N       starts N sleeping threads; prints how many started, exit 0
//   fsize BYTES     writes BYTES zeros to ./big; prints "wrote" when it could
//   connect PORT    TCP connect to 127.0.0.1:PORT; exit 0 if connected, 1 (and why) if not
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
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
  fprintf(stderr,
          "usage: sandbox_helper segv|abort|spin|oom|forkbomb|threads N|fsize B|connect P\n");
  return 64;
}
