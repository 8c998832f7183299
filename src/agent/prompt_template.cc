#include "agent/prompt_template.h"

#include "base/files.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

// Renders sections first (non-nested), then placeholders.
Result<std::string> RenderSections(const std::string& text, const TemplateVars& vars) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{#", pos);
    if (open == std::string::npos) break;
    size_t close = text.find("}}", open);
    if (close == std::string::npos) return Status::InvalidArgument("unterminated {{# in template");
    std::string name = text.substr(open + 3, close - open - 3);
    std::string end_tag = "{{/" + name + "}}";
    size_t end = text.find(end_tag, close);
    if (end == std::string::npos) return Status::InvalidArgument("section '" + name + "' is never closed with " + end_tag);
    out += text.substr(pos, open - pos);
    auto it = vars.find(name);
    if (it != vars.end() && !it->second.empty()) out += text.substr(close + 2, end - close - 2);
    pos = end + end_tag.size();
    if (pos < text.size() && text[pos] == '\n') ++pos;
  }
  return out + text.substr(pos);
}

}  // namespace

Result<std::string> RenderTemplate(const std::string& text, const TemplateVars& vars) {
  KF_ASSIGN_OR_RETURN(std::string body, RenderSections(text, vars));
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = body.find("{{", pos);
    if (open == std::string::npos) break;
    size_t close = body.find("}}", open);
    if (close == std::string::npos) break;
    out += body.substr(pos, open - pos);
    auto it = vars.find(body.substr(open + 2, close - open - 2));
    if (it != vars.end()) out += it->second;
    pos = close + 2;
  }
  return out + body.substr(pos);
}

fs::path PromptDir() {
  const char* env = std::getenv("KFORGE_PROMPTS");
  if (env && *env) return env;
  return DataDir() / "prompts";
}

Result<std::string> RenderPrompt(const std::string& name, const TemplateVars& vars) {
  Result<std::string> text = ReadFile(PromptDir() / name);
  if (!text.ok()) return Status::NotFound("prompt template " + (PromptDir() / name).string() + " is missing; set KFORGE_PROMPTS to kforge's prompts/ folder");
  return RenderTemplate(*text, vars);
}

Result<std::string> BackendPromptSection(const std::string& backend, const std::string& section) {
  fs::path file = PromptDir() / "backends" / (backend + ".md");
  Result<std::string> text = ReadFile(file);
  if (!text.ok()) return Status::NotFound("no prompt file " + file.string() + " for backend " + backend + " (one worked example is all a backend needs)");
  std::string marker = "<!-- " + section + " -->";
  size_t start = text->find(marker);
  if (start == std::string::npos) return Status::InvalidArgument(file.string() + " has no " + marker + " section");
  start += marker.size();
  size_t end = text->find("<!-- ", start);
  std::string body = text->substr(start, end == std::string::npos ? std::string::npos : end - start);
  while (!body.empty() && (body.front() == '\n')) body.erase(0, 1);
  return body;
}

}  // namespace kforge
