// Prompt templates: files under prompts/ with {{name}} placeholders and optional sections
// {{#name}} ... {{/name}} that appear only when `name` is set and non-empty.
#ifndef KFORGE_AGENT_PROMPT_TEMPLATE_H_
#define KFORGE_AGENT_PROMPT_TEMPLATE_H_

#include <filesystem>
#include <map>
#include <string>

#include "kforge/status.h"

namespace kforge {

using TemplateVars = std::map<std::string, std::string>;

// Renders `text`. Unknown placeholders render empty; an unclosed section is an error naming it.
Result<std::string> RenderTemplate(const std::string& text, const TemplateVars& vars);

// Folder of the prompt files: $KFORGE_PROMPTS, else <data dir>/prompts.
std::filesystem::path PromptDir();
// Reads prompts/<name> and renders it. NotFound names the file.
Result<std::string> RenderPrompt(const std::string& name, const TemplateVars& vars);
// The part of prompts/backends/<backend>.md after "<!-- <section> -->" up to the next marker.
Result<std::string> BackendPromptSection(const std::string& backend, const std::string& section);

}  // namespace kforge

#endif  // KFORGE_AGENT_PROMPT_TEMPLATE_H_
