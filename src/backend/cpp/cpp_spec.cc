// The cpp backend: C++ on the host CPU, built with g++ -O3 -march=native -fopenmp.
#include "backend/registry.h"

namespace kforge {

BackendSpec CppSpec() {
  BackendSpec b;
  b.name = "cpp";
  b.summary = "C++ on the host CPU (g++, OpenMP)";
  b.entry = "kf_run";
  b.abi_header = "kforge_cpu.h";
  b.deny = HostRules();
  b.device_is_host_cpu = true;
  b.extensions = {".cc", ".cpp"};
  b.code_languages = CppCodeLanguages();
  return b;
}

}  // namespace kforge
