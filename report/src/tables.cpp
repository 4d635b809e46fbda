#include "stepsim/report/tables.hpp"
#include "stepsim/scenarios/error.hpp"

#include <algorithm>
#include <sstream>

namespace stepsim::report {

namespace {

bool right(const Table& t, std::size_t c) { return c < t.right_aligned.size() && t.right_aligned[c]; }

std::string cell(const std::vector<std::string>& row, std::size_t c) { return c < row.size() ? row[c] : std::string(); }

// One cell per column, escaped, between separators.
std::string joined(const Table& t, const std::vector<std::string>& cells, const char* separator,
                   std::string (*escape)(const std::string&)) {
  std::string out;
  for (std::size_t c = 0; c < t.columns.size(); ++c) out += (c ? separator : "") + escape(cell(cells, c));
  return out;
}

// Markdown cells may not hold a pipe or a line break.
std::string md_cell(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|')
      out += "\\|";
    else if (ch == '\n' || ch == '\r')
      out += ' ';
    else
      out += ch;
  }
  return out;
}

}  // namespace

std::string latex_escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '\\': out += "\\textbackslash{}"; break;
      case '&': out += "\\&"; break;
      case '%': out += "\\%"; break;
      case '$': out += "\\$"; break;
      case '#': out += "\\#"; break;
      case '_': out += "\\_"; break;
      case '{': out += "\\{"; break;
      case '}': out += "\\}"; break;
      case '~': out += "\\textasciitilde{}"; break;
      case '^': out += "\\textasciicircum{}"; break;
      case '<': out += "\\textless{}"; break;
      case '>': out += "\\textgreater{}"; break;
      case '|': out += "\\textbar{}"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters other than tab and line breaks are not allowed in XML 1.0.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
          out += ' ';
        else
          out += ch;
    }
  }
  return out;
}

std::string to_markdown(const Table& t, MarkdownStyle style) {
  std::ostringstream os;
  if (!t.caption.empty()) os << "**" << md_cell(t.caption) << "**\n\n";
  const std::size_t n = t.columns.size();
  // Cells are filled to `width` (at least 3: the alignment row's dashes).
  std::vector<std::size_t> width(n, style == MarkdownStyle::Padded ? 3 : 0);
  if (style == MarkdownStyle::Padded) {
    for (std::size_t c = 0; c < n; ++c) width[c] = std::max(width[c], md_cell(t.columns[c]).size());
    for (const auto& row : t.rows)
      for (std::size_t c = 0; c < n; ++c) width[c] = std::max(width[c], md_cell(cell(row, c)).size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    os << "|";
    for (std::size_t c = 0; c < n; ++c) {
      const std::string v = md_cell(cell(cells, c));
      const std::string fill(std::max(width[c], v.size()) - v.size(), ' ');
      os << " " << (right(t, c) ? fill + v : v + fill) << " |";
    }
    os << "\n";
  };
  line(t.columns);
  os << "|";
  for (std::size_t c = 0; c < n; ++c)
    if (style == MarkdownStyle::Compact)
      os << (right(t, c) ? " ---: |" : " --- |");
    else
      os << " " << (right(t, c) ? std::string(width[c] - 1, '-') + ":" : std::string(width[c], '-')) << " |";
  os << "\n";
  for (const auto& row : t.rows) line(row);
  return os.str();
}

std::string to_csv(const Table& t) {
  std::string out = joined(t, t.columns, ",", csv_field) + "\n";
  for (const auto& row : t.rows) out += joined(t, row, ",", csv_field) + "\n";
  return out;
}

std::string to_latex(const Table& t) {
  std::ostringstream os;
  const bool wide = t.columns.size() > kLatexWideColumns;
  os << "\\begin{table}[htbp]\n  \\centering\n";
  if (wide) os << "  \\small\n";
  if (!t.caption.empty()) os << "  \\caption{" << latex_escape(t.caption) << "}\n";
  if (!t.label.empty()) os << "  \\label{" << t.label << "}\n";
  if (wide) {
    // A wide table fits the line: every column a tabularx X column, numbers flush right.
    os << "  \\begin{tabularx}{\\linewidth}{";
    for (std::size_t c = 0; c < t.columns.size(); ++c)
      os << (right(t, c) ? ">{\\raggedleft\\arraybackslash}X" : ">{\\raggedright\\arraybackslash}X");
  } else {
    os << "  \\begin{tabular}{";
    for (std::size_t c = 0; c < t.columns.size(); ++c) os << (right(t, c) ? 'r' : 'l');
  }
  os << "}\n    \\toprule\n    " << joined(t, t.columns, " & ", latex_escape) << " \\\\\n    \\midrule\n";
  for (const auto& row : t.rows) os << "    " << joined(t, row, " & ", latex_escape) << " \\\\\n";
  os << "    \\bottomrule\n  \\end{" << (wide ? "tabularx" : "tabular") << "}\n\\end{table}\n";
  return os.str();
}

std::string latex_tables(const std::string& provenance, const std::vector<Table>& tables) {
  std::string out = "% " + provenance + "\n% \\usepackage{booktabs, tabularx, array}\n";
  for (const auto& t : tables) out += "\n" + to_latex(t);
  return out;
}

Table select_columns(const Table& t, const std::vector<std::string>& columns) {
  if (columns.empty()) return t;
  std::vector<std::size_t> picked;
  for (const auto& name : columns) {
    const auto it = std::find(t.columns.begin(), t.columns.end(), name);
    if (it == t.columns.end()) {
      std::string have;
      for (const auto& c : t.columns) have += (have.empty() ? "" : ", ") + c;
      throw ScenarioError("--columns", "the table has no column '" + name + "' (it has: " + have + ")");
    }
    picked.push_back(static_cast<std::size_t>(it - t.columns.begin()));
  }
  Table out;
  out.caption = t.caption;
  out.label = t.label;
  for (const auto c : picked) {
    out.columns.push_back(t.columns[c]);
    out.right_aligned.push_back(right(t, c));
  }
  for (const auto& row : t.rows) {
    std::vector<std::string> cells;
    for (const auto c : picked) cells.push_back(cell(row, c));
    out.rows.push_back(std::move(cells));
  }
  return out;
}

std::string to_html(const Table& t) {
  std::ostringstream os;
  os << "<table>\n";
  if (!t.caption.empty()) os << "<caption>" << xml_escape(t.caption) << "</caption>\n";
  os << "<thead><tr>";
  for (std::size_t c = 0; c < t.columns.size(); ++c)
    os << (right(t, c) ? "<th class=\"num\">" : "<th>") << xml_escape(t.columns[c]) << "</th>";
  os << "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    os << "<tr>";
    for (std::size_t c = 0; c < t.columns.size(); ++c)
      os << (right(t, c) ? "<td class=\"num\">" : "<td>") << xml_escape(cell(row, c)) << "</td>";
    os << "</tr>\n";
  }
  os << "</tbody>\n</table>\n";
  return os.str();
}

}  // namespace stepsim::report
