#include "agent/code_extract.h"

#include <algorithm>
#include <sstream>

namespace kforge {

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool IsHostLang(const std::string& lang) {
  return lang == "cpp" || lang == "c++" || lang == "cc" || lang == "cxx" || lang == "c" || lang == "cuda" || lang == "hip";
}
bool IsClLang(const std::string& lang) { return lang == "opencl" || lang == "cl" || lang == "ocl"; }

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

bool IsPythonLang(const std::string& lang) { return lang == "python" || lang == "py" || lang == "python3"; }

Result<ExtractedCandidate> ExtractCandidate(const std::string& answer, const std::string& backend) {
  std::vector<CodeBlock> blocks = ExtractCodeBlocks(answer);
  ExtractedCandidate c;
  if (backend == "triton" || backend == "pytorch") {  // Python candidates: one ```python block
    const CodeBlock* py = nullptr;
    for (const CodeBlock& b : blocks) {
      if (!py && (IsPythonLang(b.lang) || b.lang.empty())) py = &b;
      if (!b.closed) c.truncated = true;
    }
    if (!py) {
      if (c.truncated) return c;
      return Status::InvalidArgument("no ```python code block found in the answer; answer with the whole module in one fenced block");
    }
    c.main = py->code;
    return c;
  }
  const CodeBlock* host = nullptr;
  const CodeBlock* cl = nullptr;
  for (const CodeBlock& b : blocks) {
    bool is_cl = IsClLang(b.lang) || (b.filename.size() > 3 && b.filename.substr(b.filename.size() - 3) == ".cl");
    if (is_cl && !cl) cl = &b;
    else if (!is_cl && (IsHostLang(b.lang) || b.lang.empty()) && !host) host = &b;
    if (!b.closed) c.truncated = true;
  }
  if (!host) {
    if (c.truncated) return c;  // cut off before any host code: ask again
    return Status::InvalidArgument("no ```cpp code block found in the answer; answer with the complete source in fenced code blocks");
  }
  c.main = host->code;
  if (backend == "opencl") {
    if (cl) c.program = cl->code;
    else if (c.main.find("__kernel") == std::string::npos && c.main.find("kernel void") == std::string::npos && !c.truncated)
      return Status::InvalidArgument("no ```opencl block with the kernels found; send the host launcher in a ```cpp block and the kernels in an ```opencl block");
  }
  return c;
}

}  // namespace kforge
