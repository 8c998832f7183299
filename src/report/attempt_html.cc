#include "report/attempt_html.h"

#include <fmt/format.h>

#include <algorithm>

#include "backend/registry.h"
#include "report/html.h"
#include "report/json_fields.h"
#include "report/line_diff.h"

namespace kforge {

using nlohmann::json;
using report::Arr;
using report::Bool;
using report::Field;
using report::Num;
using report::Obj;
using report::Plain;
using report::Str;

namespace {

// A field as escaped cell text; `escape` false gives it plain, for text escaped later as a whole.
std::string Cell(const json& j, const char* key, bool escape = true) {
  const json* f = Field(j, key);
  const std::string text = f ? Plain(*f) : "";
  return escape ? HtmlEscape(text) : text;
}

std::string StatusBadge(const std::string& status) {
  const std::string cls = status == "correct" ? "ok" : status.empty() ? "none" : "bad";
  return "<span class=\"status " + cls + "\">" +
         HtmlEscape(status.empty() ? "not judged" : status) + "</span>";
}

std::string Pre(const std::string& text, const std::string& cls = "") {
  return "<pre" + (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + HtmlEscape(text) +
         "</pre>\n";
}

// One output of a failing trial: its errors and its first mismatches.
std::string OutputHtml(const std::string& name, const json& o) {
  std::string h =
      "<li><b>" + HtmlEscape(name) + "</b>: " + (Bool(o, "pass", false) ? "pass" : "fail");
  if (std::string reason = Str(o, "reason"); !reason.empty()) h += " — " + HtmlEscape(reason);
  h += fmt::format(
      " (bad {}, unwritten {}, non-finite {}, max abs error {:.3g}, max rel error {:.3g})",
      static_cast<int64_t>(Num(o, "bad_count")), static_cast<int64_t>(Num(o, "unwritten")),
      static_cast<int64_t>(Num(o, "nonfinite")), Num(o, "max_abs_error"), Num(o, "max_rel_error"));
  const json mismatches = Arr(o, "first_mismatches");
  if (!mismatches.empty()) {
    h += "<table class=\"small\"><tr><th>index</th><th>coords</th><th>got</th><th>want</th></tr>";
    for (const json& m : mismatches)
      if (m.is_object())
        h += "<tr><td>" + Cell(m, "index") + "</td><td>" + Cell(m, "coords") + "</td><td>" +
             Cell(m, "got") + "</td><td>" + Cell(m, "want") + "</td></tr>";
    h += "</table>";
  }
  return h + "</li>\n";
}

// The first trial that failed, if any.
std::string FailingTrialHtml(const json& v) {
  for (const json& t : Arr(v, "trials")) {
    if (Bool(t, "pass", true)) continue;
    const std::string where = fmt::format(
        "seed {}, magnitude {}{}, sizes {}", Cell(t, "seed", false), Cell(t, "magnitude", false),
        Bool(t, "hidden_size", false) ? ", hidden size" : "", Plain(Obj(t, "sizes")));
    std::string h = "<p><b>Failing trial</b>: " + HtmlEscape(where) + "</p>\n<ul>";
    const json outputs = Obj(t, "outputs");  // named: items() does not keep a temporary alive
    for (const auto& [name, o] : outputs.items())
      if (!Bool(o, "pass", true)) h += OutputHtml(name, o);
    return h + "</ul>\n";
  }
  return "";
}

std::string ConfirmationLine(const json& c) {
  const json ci_json = Arr(c, "ci");
  double ci[2] = {0, 0};
  for (size_t k = 0; k < 2 && k < ci_json.size(); ++k)
    ci[k] = ci_json[k].is_number() ? ci_json[k].get<double>() : 0.0;
  std::string line = fmt::format("{} {:.2f}x over {}, {:.0f}% CI [{:.2f}, {:.2f}], {} rounds ({})",
                                 Str(c, "candidate"), Num(c, "ratio"), Str(c, "against"),
                                 100 * Num(c, "confidence"), ci[0], ci[1],
                                 static_cast<int64_t>(Num(c, "rounds")), Str(c, "outcome"));
  if (std::string failed = Str(c, "failed"); !failed.empty()) line += "; failed: " + failed;
  return line;
}

std::string TimingHtml(const json& v) {
  const json t = Obj(v, "timing");
  if (t.empty()) return "";
  std::string h =
      fmt::format("median {:.4f} ms, min {:.4f} ms, CV {:.1f}%, {} runs", Num(t, "median_ms"),
                  Num(t, "min_ms"), 100 * Num(t, "cv"), static_cast<int64_t>(Num(t, "runs")));
  if (const json r = Obj(v, "roofline"); Field(r, "sol_percent"))
    h += fmt::format("; SOL {:.1f}%", Num(r, "sol_percent"));
  return "<p><b>Timing</b>: " + HtmlEscape(h) + "</p>\n";
}

std::string PrecisionHtml(const json& v) {
  const json p = Obj(v, "precision");
  if (p.empty()) return "";
  std::string h = "<p><b>Precision</b>: " + HtmlEscape(Str(p, "policy")) + "</p>\n";
  if (const json tol = Obj(p, "tolerance"); !tol.empty()) {
    h += "<ul class=\"small\">";
    for (const auto& [name, t] : tol.items())
      h += "<li>" + HtmlEscape(name + ": " + Str(t, "rule")) + "</li>";
    h += "</ul>\n";
  }
  return h;
}

}  // namespace

std::string VerdictHtml(const json& v) {
  if (v.is_null()) return "<p class=\"note\">Not judged (interrupted before its verdict).</p>\n";
  if (!v.is_object()) return Pre(Plain(v));
  std::string h =
      "<p>" + StatusBadge(Str(v, "status")) + " " + HtmlEscape(Str(v, "message")) + "</p>\n";
  if (std::string gate = Str(v, "gate"); !gate.empty())
    h += "<p><b>Gate</b>: " + HtmlEscape(gate) + "</p>\n";
  if (Field(v, "duplicate_of"))
    h += "<p><b>Duplicate of</b> attempt " + Cell(v, "duplicate_of") + "</p>\n";
  if (Field(v, "confirmation_lost_to"))
    h += "<p><b>Lost in confirmation</b> to attempt " + Cell(v, "confirmation_lost_to") + "</p>\n";
  if (Bool(v, "confirmed_pick", false)) h += "<p><b>The tuner's confirmed pick.</b></p>\n";
  if (const json warnings = Arr(v, "warnings"); !warnings.empty()) {
    h += "<ul class=\"warnings\">";
    for (const json& w : warnings) h += "<li>" + HtmlEscape(Plain(w)) + "</li>";
    h += "</ul>\n";
  }
  const std::string compiler = Str(v, "compiler_output");
  if (!compiler.empty()) {
    if (Str(v, "status") == "compile_error")
      h += "<p><b>Compiler errors</b></p>\n" + Pre(compiler, "log");
    else
      h += "<details><summary>Compiler output</summary>\n" + Pre(compiler, "log") + "</details>\n";
  }
  h += FailingTrialHtml(v) + TimingHtml(v) + PrecisionHtml(v);
  if (const json confirmed = Arr(v, "confirmed"); !confirmed.empty()) {
    h += "<p><b>Confirmed</b></p><ul>";
    for (const json& c : confirmed) h += "<li>" + HtmlEscape(ConfirmationLine(c)) + "</li>";
    h += "</ul>\n";
  }
  if (const json judged = Obj(v, "judged"); !judged.empty())
    h += "<p><b>Its judgement before it failed in confirmation</b>: " +
         HtmlEscape(Str(judged, "status") + " " + Str(judged, "message")) + "</p>\n";
  return h;
}

std::string DiffHtml(const std::string& before, const std::string& after) {
  const std::vector<DiffLine> diff = LineDiff(before, after);
  const std::vector<DiffHunk> hunks = Hunks(diff);
  if (hunks.empty()) return "<p class=\"note\">Same source.</p>\n";
  const DiffStat stat = CountChanges(diff);
  std::string h =
      fmt::format("<p class=\"small\">{} lines added, {} removed</p>\n<pre class=\"diff\">",
                  stat.added, stat.removed);
  // Each line is a block-level span (its colour spans the width), so no newline between them:
  // inside <pre> one would add an empty line after each.
  for (const DiffHunk& hunk : hunks) {
    h += fmt::format("<span class=\"hunk\">@@ -{},{} +{},{} @@</span>", hunk.old_start,
                     hunk.old_count, hunk.new_start, hunk.new_count);
    for (const DiffLine& line : hunk.lines) {
      const char* cls = line.op == '+' ? "add" : line.op == '-' ? "del" : "ctx";
      h += std::string("<span class=\"") + cls + "\">" + line.op + HtmlEscape(line.text) +
           "</span>";
    }
  }
  return h + "</pre>\n";
}

namespace {

// A recorded request's messages (llm/transcript.cc's RequestToJson: "system", then "messages"
// of {role, parts: [{text} | {image: {mime_type, bytes, xxh128}}]}), each as a role and its text.
std::string MessagesHtml(const json& request) {
  if (!request.is_object()) return Pre(Plain(request));
  std::string h;
  auto message = [&h](const std::string& role, const std::string& text) {
    h += "<div class=\"msg\"><div class=\"role\">" + HtmlEscape(role) + "</div>" +
         Pre(text, "text") + "</div>\n";
  };
  if (std::string system = Str(request, "system"); !system.empty()) message("system", system);
  for (const json& m : Arr(request, "messages")) {
    std::string text = Str(m, "content");
    for (const json& part : Arr(m, "parts")) {
      if (const json* t = Field(part, "text"); t && t->is_string())
        text += t->get<std::string>();
      else if (const json image = Obj(part, "image"); !image.empty())
        text += fmt::format("[image {}, {} bytes, xxh128 {}]", Str(image, "mime_type"),
                            static_cast<int64_t>(Num(image, "bytes")), Str(image, "xxh128"));
    }
    message(Str(m, "role"), text);
  }
  return h;
}

std::string CallHtml(const LlmCallRow& c) {
  std::string head =
      fmt::format("{} call to {}: {} in / {} out tokens ({} cached), ${:.4f}, {:.1f} s, finish {}",
                  c.agent, c.model, c.input_tokens, c.output_tokens, c.cached_tokens, c.cost_usd,
                  c.latency_ms / 1000, c.finish_reason.empty() ? "-" : c.finish_reason);
  std::string h = "<div class=\"call\"><p>" + HtmlEscape(head) + "</p>\n";
  if (!c.error.empty()) h += "<p class=\"error\">error: " + HtmlEscape(c.error) + "</p>\n";
  std::string size = c.prompt_chars > 0 ? fmt::format("{} chars, ~{} tokens estimated",
                                                      c.prompt_chars, c.prompt_tokens_estimate)
                                        : "size not recorded";
  if (!c.prompt_shrunk.empty()) size += "; shrunk to fit: " + c.prompt_shrunk;
  h += "<details><summary>Prompt (" + HtmlEscape(size) + ")</summary>\n" +
       MessagesHtml(report::ParseStored(c.prompt_json)) + "</details>\n";
  h += fmt::format("<details><summary>Answer ({} chars)</summary>\n", c.response_text.size()) +
       Pre(c.response_text, "text") + "</details>\n";
  return h + "</div>\n";
}

std::string RecommendationHtml(const RecommendationRow& r) {
  const json rec = report::ParseStored(r.json);
  std::string h =
      "<dl class=\"rec\"><dt>from</dt><dd>" +
      HtmlEscape(r.source == "llm" ? "the analyst model" : "the rules (" + r.source + ")") +
      "</dd>";
  if (!rec.is_object()) return h + "<dt>advice</dt><dd>" + HtmlEscape(Plain(rec)) + "</dd></dl>\n";
  for (const char* key : {"bottleneck", "evidence", "change", "expected_gain"})
    if (Field(rec, key)) h += std::string("<dt>") + key + "</dt><dd>" + Cell(rec, key) + "</dd>";
  return h + "</dl>\n";
}

std::string CodeBlock(const std::string& title, const std::string& code,
                      const std::string& language) {
  const size_t lines =
      std::count(code.begin(), code.end(), '\n') + (code.empty() || code.back() == '\n' ? 0 : 1);
  const std::string cls = language == "plaintext" ? "nohighlight" : "language-" + language;
  return "<details><summary>" + HtmlEscape(title) + fmt::format(" ({} lines)</summary>\n", lines) +
         "<pre><code class=\"" + cls + "\">" + HtmlEscape(code) + "</code></pre></details>\n";
}

std::string SummaryLine(const AttemptRow& a) {
  std::string line = fmt::format("Attempt {} · {} (iteration {})", a.number, a.phase, a.iteration);
  if (a.median_ms > 0) line += fmt::format(" · {:.4f} ms", a.median_ms);
  if (!a.params_json.empty()) line += " · " + a.params_json;
  return HtmlEscape(line) + " " + StatusBadge(a.status);
}

}  // namespace

std::string AttemptSection(const AttemptRow& a, const AttemptContext& context) {
  std::string h = fmt::format("<details class=\"attempt\" id=\"attempt-{}\"{}>\n<summary>",
                              a.number, context.best ? " open" : "") +
                  SummaryLine(a) + (context.best ? " <span class=\"tag\">best</span>" : "") +
                  "</summary>\n<div class=\"attempt-body\">\n";
  h += "<h4>Verdict</h4>\n" + VerdictHtml(report::ParseStored(a.verdict_json));
  if (!context.recommendations.empty()) {
    h += "<h4>Analyst's recommendation</h4>\n";
    for (const RecommendationRow* r : context.recommendations) h += RecommendationHtml(*r);
  }
  if (context.base) {
    h += fmt::format(
        "<h4>Diff from attempt {} ({})</h4>\n", context.base->number,
        context.base_is_parent ? "its parent" : "the attempt before; no parent recorded");
    h += DiffHtml(context.base->source, a.source);
  }
  h += CodeBlock("Source", a.source, SourceLanguage(a.source, context.backend));
  const json extra = report::ParseStored(a.extra_files_json);
  if (extra.is_object())
    for (const auto& [name, text] : extra.items())
      if (text.is_string())
        h += CodeBlock(name, text.get<std::string>(), name.ends_with(".py") ? "python" : "cpp");
  if (!context.calls.empty()) {
    h += "<h4>Model calls</h4>\n";
    for (const LlmCallRow* c : context.calls) h += CallHtml(*c);
  }
  return h + "</div>\n</details>\n";
}

std::string SourceLanguage(const std::string& source, const std::string& backend) {
  const BackendSpec* spec = FindBackend(backend);
  // Any backend takes a KernelBench ModelNew module.
  if (source.rfind("import ", 0) == 0 || source.find("\ndef ") != std::string::npos) return "python";
  return spec ? spec->highlight : "plaintext";
}

}  // namespace kforge
