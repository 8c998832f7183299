// Static checks on candidate source (EVALUATION.md section 5): a backend's deny rules applied
// to the source with comments removed. A regular-expression check: it catches the honest
// mistakes and the lazy hacks; the runtime gates catch the rest.
#ifndef KFORGE_EVAL_STATIC_CHECK_H_
#define KFORGE_EVAL_STATIC_CHECK_H_

#include <string>
#include <vector>

#include "backend/registry.h"

namespace kforge {

// Removes // and /* */ comments, keeping line breaks (so line numbers stay right).
std::string StripComments(const std::string& source);

// One finding per rule hit: "line 12: starts processes: `system(`".
// Python sources (python = true) drop whole-line '#' comments only.
std::string StripPythonComments(const std::string& source);
std::vector<std::string> StaticCheck(const std::string& source, const std::vector<DenyRule>& rules,
                                     bool python = false);

}  // namespace kforge

#endif  // KFORGE_EVAL_STATIC_CHECK_H_
