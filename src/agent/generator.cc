#include "agent/generator.h"

#include <sstream>

#include "agent/prompt_template.h"
#include "base/files.h"

namespace kforge {

using nlohmann::json;

namespace {

// The first lines that mention an error, and a few after each: what a model needs to fix a
// compile error without the noise of notes and instantiation stacks.
std::string TrimCompilerOutput(const std::string& log) {
  std::istringstream in(log);
  std::string line, out;
  int keep = 0, errors = 0;
  while (std::getline(in, line) && errors <= 5) {
    if (line.find("error") != std::string::npos) {
      keep = 3;
      ++errors;
    }
    if (keep-- > 0) out += line + "\n";
  }
  return out.empty() ? TailLines(log, 20, 4000) : out;
}

// The problem file as the compact profile shows it: without its description (the prompt's
// first section has it), its comments and the tables only kforge reads ([reference], [seeds],
// [candidates]); names, sizes, shapes, attributes and cost stay. Line-based, for the problem
// format's own layout (docs/problem-format.md).
std::string CompactProblemToml(const std::string& toml) {
  std::istringstream in(toml);
  std::string line, out;
  bool in_description = false, skip_table = false, blank = false;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(" \t");
    const std::string trimmed = first == std::string::npos ? "" : line.substr(first);
    if (in_description) {
      in_description = trimmed.find("\"\"\"") == std::string::npos;
      continue;
    }
    if (trimmed.rfind("description", 0) == 0) {
      size_t open = trimmed.find("\"\"\"");
      in_description = open != std::string::npos && trimmed.find("\"\"\"", open + 3) == std::string::npos;
      continue;
    }
    if (trimmed.rfind('#', 0) == 0) continue;
    if (trimmed.rfind('[', 0) == 0) skip_table = trimmed == "[reference]" || trimmed == "[seeds]" || trimmed == "[candidates]";
    if (skip_table || (trimmed.empty() && blank)) continue;
    blank = trimmed.empty();
    out += line + "\n";
  }
  return out;
}

// The ABI as the profile has it: the summary from the backend's prompt file, or the whole ABI
// document (a backend without one, such as pytorch, falls back to its summary).
Result<std::string> AbiText(const std::string& backend, llm::PromptProfile profile) {
  if (profile == llm::PromptProfile::kFull) {
    Result<std::string> doc = ReadFile(DataDir() / "docs" / ("abi-" + backend + ".md"));
    if (doc.ok()) return doc;
  }
  return BackendPromptSection(backend, "abi-summary");
}

}  // namespace

std::string VerdictFeedback(const json& v) {
  std::string status = v.value("status", "");
  std::string out = "Status: " + status + "\n" + v.value("message", "") + "\n";
  if (status == "compile_error") out += "\nCompiler errors:\n```\n" + TrimCompilerOutput(v.value("compiler_output", "")) + "```\n";
  for (const json& t : v.value("trials", json::array())) {
    if (t.value("pass", true)) continue;
    out += "\nFailing trial: sizes " + t.value("sizes", json::object()).dump() + ", seed " + std::to_string(t.value("seed", 0)) + "\n";
    // Named, not a temporary: items() refers to the object, which must outlive the loop.
    const json outputs = t.value("outputs", json::object());
    for (const auto& [name, o] : outputs.items()) {
      if (o.value("pass", true) && o.value("deterministic", true)) continue;
      out += "output " + name + ": " + o.value("reason", "") + "; max abs error " + std::to_string(o.value("max_abs_error", 0.0)) +
             ", rms-relative error " + std::to_string(o.value("rms_rel_error", 0.0)) + "\nfirst mismatches (index: got vs want): ";
      for (const json& m : o.value("first_mismatches", json::array())) out += m["coords"].dump() + ": " + m["got"].dump() + " vs " + m["want"].dump() + "; ";
      out += "\n";
    }
  }
  if (v.contains("timing")) {
    const json& t = v["timing"];
    out += "\nMedian time " + std::to_string(t.value("median_ms", 0.0)) + " ms";
    if (v.contains("roofline")) out += ", " + std::to_string(v["roofline"].value("sol_percent", 0.0)) + "% of the speed-of-light floor";
    out += "\n";
  }
  return out;
}

std::string FencedBlock(const std::string& language, const std::string& code) {
  return "```" + language + "\n" + code + (code.empty() || code.ends_with('\n') ? "" : "\n") +
         "```\n";
}

Result<llm::ChatRequest> BuildGenerationRequest(const GenerationContext& c) {
  const Problem& p = *c.problem;
  KF_ASSIGN_OR_RETURN(std::string toml, ReadFile(p.path));
  if (c.profile == llm::PromptProfile::kCompact && p.format != ProblemFormat::kPyTorch) toml = CompactProblemToml(toml);
  std::string reference;
  if (p.format == ProblemFormat::kPyTorch) {
    reference = "(The PyTorch module above is the reference: Model with get_inputs() and get_init_inputs(). Native "
                "candidates receive its forward() inputs and then its parameters and buffers as named inputs, dots "
                "as underscores (gemm.weight -> gemm_weight); outputs are named out (out0, out1, ... for tuples); "
                "its module-level integer constants are size attributes, its float constants attributes.)";
  } else {
    KF_ASSIGN_OR_RETURN(reference, ReadFile(p.reference));
  }
  KF_ASSIGN_OR_RETURN(std::string files, BackendPromptSection(c.backend, "answer-format"));
  KF_ASSIGN_OR_RETURN(std::string example, BackendPromptSection(c.backend, "example"));
  KF_ASSIGN_OR_RETURN(std::string abi, AbiText(c.backend, c.profile));
  TemplateVars vars = {{"backend", c.backend}, {"backend_files", files}};
  KF_ASSIGN_OR_RETURN(std::string system, RenderPrompt("generator_system.md", vars));
  KF_ASSIGN_OR_RETURN(std::string task, RenderPrompt("task_" + c.task + ".md", vars));
  std::string deny;
  for (const std::string& d : c.deny) deny += "- `" + d + "`\n";
  vars.insert({{"problem_name", p.name}, {"problem_description", p.description}, {"problem_toml", toml},
               {"reference_source", reference}, {"abi", abi},
               {"example", example}, {"transfer", c.transfer}, {"transfer_backend", c.transfer_backend},
               {"previous", c.previous}, {"verdict_status", c.verdict_status},
               {"verdict_feedback", c.verdict_feedback}, {"recommendation", c.recommendation},
               {"memory", c.memory}, {"instructions", c.instructions}, {"context", c.context},
               {"deny", deny}, {"task", task}});
  KF_ASSIGN_OR_RETURN(std::string user, RenderPrompt("generate.md", vars));
  llm::ChatRequest req;
  req.system = system;
  req.messages.push_back(llm::Message::User(user));
  req.files = c.previous_files;
  return req;
}

json RequestToJson(const llm::ChatRequest& r) {
  json msgs = json::array();
  for (const llm::Message& m : r.messages) {
    json parts = json::array();
    for (const llm::ContentPart& part : m.parts) {
      // The image's hash, not its bytes: the same XXH3-128 that transcripts record.
      if (part.is_image()) parts.push_back({{"image", part.mime_type}, {"bytes", part.data.size()}, {"xxh128", Hash128Hex(part.data)}});
      else parts.push_back({{"text", part.text}});
    }
    msgs.push_back({{"role", m.role == llm::Role::kUser ? "user" : "assistant"}, {"parts", parts}});
  }
  json j = {{"system", r.system}, {"messages", msgs}, {"model", r.options.model}};
  // The sampling settings the agent asked for (the client adds the model's own defaults).
  if (r.options.temperature) j["temperature"] = *r.options.temperature;
  if (r.options.max_output_tokens) j["max_output_tokens"] = *r.options.max_output_tokens;
  if (r.options.seed) j["seed"] = *r.options.seed;
  return j;
}

}  // namespace kforge
