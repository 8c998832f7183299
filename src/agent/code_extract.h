// Extracting candidate source from a model's answer: fenced code blocks with prose around
// them, one or several files, a missing closing fence.
#ifndef KFORGE_AGENT_CODE_EXTRACT_H_
#define KFORGE_AGENT_CODE_EXTRACT_H_

#include <string>
#include <vector>

#include "kforge/status.h"

namespace kforge {

struct CodeBlock {
  std::string lang;      // lower-case info-string word: "cpp", "opencl", "" ...
  std::string filename;  // a name from the info string or a "// file: x" first line, or ""
  std::string code;
  bool closed = true;    // false when the answer ended inside the block
};

std::vector<CodeBlock> ExtractCodeBlocks(const std::string& answer);

// The candidate for a backend: the main file and, for backends with a sibling program file,
// that file's text.
struct ExtractedCandidate {
  std::string main;
  std::string program;  // e.g. OpenCL C for the `opencl` backend; empty otherwise
  bool truncated = false;
};

// Picks the files `backend` needs from the answer. `truncated` is set when a block was never
// closed. Fails with a message for the model ("no ```cpp block found; ...") when nothing fits.
Result<ExtractedCandidate> ExtractCandidate(const std::string& answer, const std::string& backend);

}  // namespace kforge

#endif  // KFORGE_AGENT_CODE_EXTRACT_H_
