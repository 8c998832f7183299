// Prints the size of the first generation prompt per problem, backend and prompt profile:
// characters and kforge's token estimate (agent/prompt_fit.h). docs/loop.md's "Prompt size"
// table comes from it.
//
//   kforge_prompt_sizes [--dump <folder>] [<problem>/<backend> ...]   (default: gelu/cpp
//   softmax/opencl)
//
// With --dump, each prompt is written to <folder>/<problem>-<backend>-<profile>.json as
// {"system": ..., "user": ...}, for counting with a model's own tokenizer.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/generator.h"
#include "agent/prompt_fit.h"
#include "base/files.h"
#include "kforge/problem.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

Status Measure(const std::string& problem_name, const std::string& backend, const fs::path& dump) {
  KF_ASSIGN_OR_RETURN(fs::path file, FindProblem(problem_name));
  KF_ASSIGN_OR_RETURN(Problem problem, LoadProblem(file));
  for (llm::PromptProfile profile : {llm::PromptProfile::kFull, llm::PromptProfile::kCompact}) {
    GenerationContext ctx;
    ctx.problem = &problem;
    ctx.backend = backend;
    ctx.task = "first";
    ctx.profile = profile;
    KF_ASSIGN_OR_RETURN(llm::ChatRequest request, BuildGenerationRequest(ctx));
    PromptSize size = MeasurePrompt(request);
    std::string name =
        problem_name + "/" + backend + " " + std::string(llm::PromptProfileName(profile));
    std::printf("%-28s %7lld chars  ~%6lld tokens (estimated)\n", name.c_str(),
                static_cast<long long>(size.chars), static_cast<long long>(size.estimated_tokens));
    if (dump.empty()) continue;
    nlohmann::json j = {{"system", request.system},
                        {"user", request.messages.front().parts.front().text}};
    fs::path out = dump / (problem_name + "-" + backend + "-" +
                           std::string(llm::PromptProfileName(profile)) + ".json");
    KF_RETURN_IF_ERROR(WriteFileAtomic(out, j.dump(1)));
  }
  return Status::Ok();
}

int Main(int argc, char** argv) {
  fs::path dump;
  std::vector<std::string> pairs;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--dump" && i + 1 < argc)
      dump = argv[++i];
    else
      pairs.push_back(arg);
  }
  if (pairs.empty()) pairs = {"gelu/cpp", "softmax/opencl"};
  if (!dump.empty()) fs::create_directories(dump);
  for (const std::string& pair : pairs) {
    size_t slash = pair.rfind('/');
    if (slash == std::string::npos) {
      std::fprintf(stderr, "kforge_prompt_sizes: '%s' is not <problem>/<backend>\n", pair.c_str());
      return 2;
    }
    Status s = Measure(pair.substr(0, slash), pair.substr(slash + 1), dump);
    if (!s.ok()) {
      std::fprintf(stderr, "kforge_prompt_sizes: %s: %s\n", pair.c_str(), s.message().c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace kforge

int main(int argc, char** argv) { return kforge::Main(argc, argv); }
