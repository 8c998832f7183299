// Included into every C++ file that links kforge_base (a forced include, base/CMakeLists.txt),
// before nlohmann/json.hpp is seen.
//
// nlohmann::json's const operator[] on a missing key is an assertion, and with NDEBUG it reads
// past the end of the object's map: undefined behaviour, a segfault now and then. Worker reports
// and recorded verdicts are read through const references everywhere, and a report comes from a
// process the judge does not trust. Here a failed assertion throws json::out_of_range (id 403),
// which the evaluator already turns into a `runtime_error` verdict ("the worker's report is
// malformed") like any other type error. In a noexcept function of the library (only its own
// invariants are checked there) the throw ends the process, as the assert would.
#pragma once

namespace kforge {
[[noreturn]] void JsonAssertionFailed(const char* condition);
}  // namespace kforge

#define JSON_ASSERT(x) ((x) ? static_cast<void>(0) : ::kforge::JsonAssertionFailed(#x))
