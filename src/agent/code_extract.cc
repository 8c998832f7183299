#include "agent/code_extract.h"

#include <algorithm>
#include <sstream>

#include "backend/registry.h"

namespace kforge {

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool Among(const std::string& lang, const std::vector<std::string>& words) {
  return std::find(words.begin(), words.end(), lang) != words.end();
}

void ParseInfo(const std::string& info, CodeBlock* b) {
  std::istringstream in(info);
  std::string word;
  in >> word;
  b->lang = Lower(word);
  std::string rest;
  while (in >> rest) {
    if (rest.rfind("file=", 0) == 0) rest = rest.substr(5);
    if (rest.find('.') != std::string::npos) b->filename = rest;
  }
  if (b->lang.find('.') != std::string::npos) {  // ```kernel.cl
    b->filename = b->lang;
    b->lang = Lower(b->lang.substr(b->lang.rfind('.') + 1));
  }
}

void FilenameFromFirstLine(CodeBlock* b) {
  size_t nl = b->code.find('\n');
  std::string first = b->code.substr(0, nl);
  for (const char* tag : {"// file:", "// File:", "// filename:"}) {
    size_t p = first.find(tag);
    if (p != std::string::npos && b->filename.empty()) {
      std::istringstream in(first.substr(p + std::string(tag).size()));
      in >> b->filename;
    }
  }
  if (!b->filename.empty() && b->lang.empty() && b->filename.find('.') != std::string::npos)
    b->lang = Lower(b->filename.substr(b->filename.rfind('.') + 1));
}

}  // namespace

std::vector<CodeBlock> ExtractCodeBlocks(const std::string& answer) {
  std::vector<CodeBlock> blocks;
  std::istringstream in(answer);
  std::string line;
  CodeBlock* open = nullptr;
  std::string fence;
  while (std::getline(in, line)) {
    std::string trimmed = line.substr(line.find_first_not_of(" \t") == std::string::npos ? line.size() : line.find_first_not_of(" \t"));
    if (!open && trimmed.rfind("```", 0) == 0) {
      blocks.push_back({});
      open = &blocks.back();
      fence = trimmed.substr(0, trimmed.find_first_not_of('`'));
      ParseInfo(trimmed.substr(fence.size()), open);
      open->closed = false;
      continue;
    }
    // A closing fence may carry trailing blanks (or a CR from CRLF line ends).
    std::string bare = trimmed.substr(0, trimmed.find_last_not_of(" \t\r") + 1);
    if (open && bare.rfind(fence, 0) == 0 && bare.find_first_not_of('`') == std::string::npos) {
      open->closed = true;
      FilenameFromFirstLine(open);
      open = nullptr;
      continue;
    }
    if (open) open->code += line + "\n";
  }
  if (open) FilenameFromFirstLine(open);
  return blocks;
}

// The backend's spec (backend/registry.h) names the info-string words of its main file's block
// and of its sibling kernel source's; an untagged block counts as the main file.
Result<ExtractedCandidate> ExtractCandidate(const std::string& answer, const std::string& backend) {
  const BackendSpec* spec = FindBackend(backend);
  if (!spec) return Status::InvalidArgument("unknown backend '" + backend + "'; known: " + BackendNames());
  std::vector<CodeBlock> blocks = ExtractCodeBlocks(answer);
  ExtractedCandidate c;
  const std::string main_lang = spec->code_languages.empty() ? "" : spec->code_languages[0];
  const std::string sibling = spec->sibling_extension;
  const CodeBlock* main = nullptr;
  const CodeBlock* program = nullptr;
  for (const CodeBlock& b : blocks) {
    const bool is_program = spec->sibling_program_source &&
                            (Among(b.lang, spec->sibling_code_languages) || (!sibling.empty() && b.filename.ends_with(sibling)));
    if (is_program && !program) program = &b;
    else if (!is_program && (Among(b.lang, spec->code_languages) || b.lang.empty()) && !main) main = &b;
    if (!b.closed) c.truncated = true;
  }
  if (!main) {
    if (c.truncated) return c;  // cut off before the main file: ask again
    return Status::InvalidArgument("no ```" + main_lang + " code block found in the answer; answer with the " +
                                   (spec->python_hosted ? "whole module in one fenced block" : "complete source in fenced code blocks"));
  }
  c.main = main->code;
  if (spec->sibling_program_source) {
    const std::string program_lang = spec->sibling_code_languages.empty() ? sibling : spec->sibling_code_languages[0];
    if (program) c.program = program->code;
    else if (c.main.find("__kernel") == std::string::npos && c.main.find("kernel void") == std::string::npos && !c.truncated)
      return Status::InvalidArgument("no ```" + program_lang + " block with the kernels found; send the host launcher in a ```" +
                                     main_lang + " block and the kernels in an ```" + program_lang + " block");
  }
  return c;
}

}  // namespace kforge
