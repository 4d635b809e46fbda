#include "stepsim/report/html.hpp"

#include <sstream>

#include "stepsim/report/tables.hpp"

namespace stepsim::report {

namespace {

constexpr const char* kCss =
    "body { font-family: sans-serif; margin: 24px; color: #222222; background: #ffffff; }\n"
    "h1 { font-size: 22px; margin-bottom: 4px; }\n"
    "h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #dddddd; padding-bottom: 4px; }\n"
    "p.subtitle { color: #555555; margin-top: 0; }\n"
    "p.note { color: #555555; font-size: 13px; }\n"
    "table { border-collapse: collapse; margin: 8px 0 16px 0; font-size: 12px; }\n"
    "caption { text-align: left; font-weight: bold; padding-bottom: 4px; }\n"
    "th, td { padding: 3px 7px; border-bottom: 1px solid #e4e4e4; text-align: left; white-space: nowrap; }\n"
    "thead th { border-bottom: 2px solid #444444; }\n"
    "th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; }\n"
    "div.row { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }\n"
    "div.block { margin: 8px 0; max-width: 100%; overflow-x: auto; }\n"
    "div.block svg { max-width: 100%; height: auto; }\n"
    "footer { margin-top: 32px; color: #777777; font-size: 12px; }\n"
    "@page { margin: 12mm; }\n"
    "@media print {\n"
    "  body { margin: 0; font-size: 11px; }\n"
    "  h2 { break-after: avoid; page-break-after: avoid; }\n"
    "  p.note { break-after: avoid; page-break-after: avoid; }\n"
    "  div.block { overflow: visible; max-width: none; break-inside: avoid; page-break-inside: avoid; }\n"
    "  div.row { display: block; }\n"
    "  div.block svg { width: 100%; max-width: 100%; height: auto; }\n"
    "  table { font-size: 8px; width: 100%; }\n"
    "  th, td { white-space: normal; padding: 1px 3px; }\n"
    "}\n";

}  // namespace

std::string html_document(const std::string& title, const std::string& subtitle,
                          const std::vector<HtmlSection>& sections, const std::string& footer) {
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\" xml:lang=\"en\">\n<head>\n"
     << "<meta charset=\"utf-8\"/>\n<title>" << xml_escape(title) << "</title>\n<style>\n"
     << kCss << "</style>\n</head>\n<body>\n";
  os << "<h1>" << xml_escape(title) << "</h1>\n";
  if (!subtitle.empty()) os << "<p class=\"subtitle\">" << xml_escape(subtitle) << "</p>\n";
  for (const auto& s : sections) {
    os << "<h2>" << xml_escape(s.heading) << "</h2>\n";
    if (!s.note.empty()) os << "<p class=\"note\">" << xml_escape(s.note) << "</p>\n";
    if (s.side_by_side) os << "<div class=\"row\">\n";
    for (const auto& b : s.blocks) os << "<div class=\"block\">\n" << b << "</div>\n";
    if (s.side_by_side) os << "</div>\n";
  }
  if (!footer.empty()) os << "<footer>" << xml_escape(footer) << "</footer>\n";
  os << "</body>\n</html>\n";
  return os.str();
}

}  // namespace stepsim::report
