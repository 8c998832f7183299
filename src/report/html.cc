#include "report/html.h"

#include <cctype>

#include "report/report_assets.h"

namespace kforge {

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ScriptJson(const nlohmann::json& data) {
  // replace: a model's answer cut in the middle of a UTF-8 sequence must not abort the report.
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    // Outside strings JSON has none of these characters, so escaping them everywhere is exact.
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    // U+2028/U+2029 (E2 80 A8/A9) end a line in older JavaScript parsers.
    else if (c == '\xE2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
             (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

bool StartsWithNoCase(std::string_view text, size_t at, std::string_view prefix) {
  if (text.size() - at < prefix.size()) return false;
  for (size_t k = 0; k < prefix.size(); ++k)
    if (std::tolower(static_cast<unsigned char>(text[at + k])) != prefix[k]) return false;
  return true;
}

}  // namespace

std::string InlineScript(std::string_view js) {
  std::string out;
  out.reserve(js.size());
  for (size_t i = 0; i < js.size(); ++i) {
    if (js[i] == '<' && (StartsWithNoCase(js, i, "</script") || StartsWithNoCase(js, i, "<!--"))) {
      out += "<\\";  // then "/script" or "!--" as they were: "<\/script", "<\!--"
      continue;
    }
    out += js[i];
  }
  return out;
}

std::string RenderPage(const HtmlPage& page) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta http-equiv=\"Content-Security-Policy\" content=\"" + HtmlEscape(page.csp) + "\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + HtmlEscape(page.title) + "</title>\n";
  html += "<style>\n" + std::string(kReportCss) + "</style>\n";
  html += page.libraries;
  html += "</head>\n<body>\n" + page.body;
  html += "<script type=\"application/json\" id=\"kforge-data\">" + ScriptJson(page.data) +
          "</script>\n";
  html += "<script>\n" + std::string(kReportCommonJs) + "\n" + page.page_js + "\n</script>\n";
  html += "</body>\n</html>\n";
  return html;
}

std::string KeyValueRow(std::string_view key, std::string_view value) {
  return "<tr><th>" + HtmlEscape(key) + "</th><td>" + HtmlEscape(value) + "</td></tr>\n";
}

}  // namespace kforge
