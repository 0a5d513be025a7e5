#include "common/jobspec/shell_placeholders.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>

namespace clusterd {

namespace {

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// "{name}" at `pos`: the name's length, or 0 when it is not a placeholder.
struct HereDoc {
  std::string delimiter;
  bool quoted = false;
  bool strip_tabs = false;  // <<-
};

// One nesting of the command as the shell reads it (POSIX 2.2, 2.3, 2.6.3,
// 2.7.4): the whole command, and in it $(...), `...`, $((...)) and ${...},
// each read afresh whatever quotes they stand in. A wrong guess here can
// only give a wrong value, never have the shell run one: what is written
// for a placeholder is a variable reference whichever context it is
// written for, and the shell does not read an expansion's result as code.
struct ShellLevel {
  enum Opener { kTop, kParen, kBacktick, kArith, kBrace } opener;
  enum Mode { kNone, kSingle, kDouble, kHereDoc, kComment } mode = kNone;
  bool brace_in_quotes = false;  // a ${...} in "..." or a here-document: its quotes do not nest
  bool word_start = true;        // the next character starts a word (for # and case/esac)
  bool line_start = false;       // kHereDoc: at the start of a line of its text
  int parens = 0;                // ( open inside $( or $((
  int cases = 0;                 // case ... esac open inside $(: its pattern's ) closes nothing
  std::deque<HereDoc> here_docs; // waiting for the next newline; the front is the one being read
};

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool EndsWord(char c) { return IsBlank(c) || c == '\n' || (c != '\0' && std::strchr(";&|()<>", c) != nullptr); }

bool KeywordAt(const std::string& s, size_t pos, const char* word) {
  const size_t n = std::strlen(word);
  return s.compare(pos, n, word) == 0 && (pos + n == s.size() || EndsWord(s[pos + n]));
}

}  // namespace

size_t PlaceholderAt(const std::string& arg, size_t pos) {
  if (arg[pos] != '{' || (pos > 0 && arg[pos - 1] == '$')) return 0;
  size_t end = pos + 1;
  while (end < arg.size() && IsIdentifierChar(arg[end])) ++end;
  if (end == pos + 1 || end >= arg.size() || arg[end] != '}') return 0;
  if (std::isdigit(static_cast<unsigned char>(arg[pos + 1]))) return 0;
  return end - pos - 1;
}

bool IsPlaceholderName(const std::string& name) {
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), IsIdentifierChar);
}

Result<std::string> RewriteShell(const std::string& s, const Replacer& replace) {
  std::string out;
  std::vector<ShellLevel> levels{ShellLevel{ShellLevel::kTop}};
  size_t pos = 0;
  auto copy = [&](size_t n) {
    n = std::min(n, s.size() - pos);
    out.append(s, pos, n);
    pos += n;
  };
  // $((, $(, ${ or `: a new level; else false.
  auto open = [&](const ShellLevel& level) {
    const bool quoted =
        level.mode == ShellLevel::kDouble || level.mode == ShellLevel::kHereDoc || level.brace_in_quotes;
    if (s.compare(pos, 3, "$((") == 0) {
      copy(3);
      levels.push_back(ShellLevel{ShellLevel::kArith});
    } else if (s.compare(pos, 2, "$(") == 0) {
      copy(2);
      levels.push_back(ShellLevel{ShellLevel::kParen});
    } else if (s.compare(pos, 2, "${") == 0) {
      copy(2);
      ShellLevel brace{ShellLevel::kBrace};
      brace.brace_in_quotes = quoted;
      levels.push_back(brace);
    } else if (s[pos] == '`') {
      copy(1);
      levels.push_back(ShellLevel{ShellLevel::kBacktick});
    } else {
      return false;
    }
    return true;
  };
  auto close = [&](size_t n) {
    copy(n);
    levels.pop_back();
    levels.back().word_start = false;
  };

  while (pos < s.size()) {
    ShellLevel& level = levels.back();
    const char c = s[pos];

    if (level.mode == ShellLevel::kHereDoc && level.line_start) {
      level.line_start = false;
      const HereDoc& doc = level.here_docs.front();
      const size_t eol = std::min(s.find('\n', pos), s.size());
      size_t from = pos;
      if (doc.strip_tabs) while (from < eol && s[from] == '\t') ++from;
      if (s.compare(from, eol - from, doc.delimiter) == 0) {
        copy(eol - pos + 1);
        level.here_docs.pop_front();
        if (level.here_docs.empty()) {
          level.mode = ShellLevel::kNone;
          level.word_start = true;
        } else {
          level.line_start = true;
        }
        continue;
      }
    }

    if (const size_t n = PlaceholderAt(s, pos)) {
      ShellContext context = ShellContext::kUnquoted;
      switch (level.mode) {
        case ShellLevel::kSingle: context = ShellContext::kSingle; break;
        case ShellLevel::kDouble: context = ShellContext::kDouble; break;
        case ShellLevel::kComment: context = ShellContext::kComment; break;
        case ShellLevel::kHereDoc:
          context = level.here_docs.front().quoted ? ShellContext::kQuotedHereDoc : ShellContext::kHereDoc;
          break;
        case ShellLevel::kNone:
          if (level.opener == ShellLevel::kArith) context = ShellContext::kArithmetic;
          if (level.brace_in_quotes) context = ShellContext::kDouble;
          break;
      }
      ASSIGN_OR_RETURN(std::string text, replace(s.substr(pos + 1, n), context));
      out += text;
      pos += n + 2;
      level.word_start = false;
      continue;
    }

    // Backquoted text ends at the first unescaped ` whatever it holds.
    if (c == '`' && level.opener == ShellLevel::kBacktick) {
      close(1);
      continue;
    }

    switch (level.mode) {
      case ShellLevel::kComment:
        if (c == '\n') {
          level.mode = ShellLevel::kNone;
          continue;  // the newline as a newline: it may start here-documents
        }
        copy(1);
        continue;
      case ShellLevel::kSingle:
        if (c == '\'') level.mode = ShellLevel::kNone;
        copy(1);
        continue;
      case ShellLevel::kDouble:
        if (c == '\\') {
          copy(2);
        } else if (c == '"') {
          level.mode = ShellLevel::kNone;
          copy(1);
        } else if (!open(level)) {
          copy(1);
        }
        continue;
      case ShellLevel::kHereDoc:
        if (level.here_docs.front().quoted) {
          if (c == '\n') level.line_start = true;
          copy(1);
        } else if (c == '\\') {
          // Only \$ \` \\ and \newline escape there; a backslash before
          // anything else is text.
          const char next = pos + 1 < s.size() ? s[pos + 1] : '\0';
          copy(next == '$' || next == '`' || next == '\\' || next == '\n' ? 2 : 1);
        } else if (c == '\n') {
          level.line_start = true;
          copy(1);
        } else if (!open(level)) {
          copy(1);
        }
        continue;
      case ShellLevel::kNone:
        break;
    }

    // Outside quotes.
    const bool was_word_start = level.word_start;
    level.word_start = EndsWord(c);
    if (c == '\\') {
      copy(2);
      continue;
    }
    if (!level.brace_in_quotes && c == '\'') {
      level.mode = ShellLevel::kSingle;
      copy(1);
      continue;
    }
    if (!level.brace_in_quotes && c == '"') {
      level.mode = ShellLevel::kDouble;
      copy(1);
      continue;
    }
    if (open(level)) continue;
    switch (level.opener) {
      case ShellLevel::kBrace:
        if (c == '}') {
          close(1);
          continue;
        }
        break;
      case ShellLevel::kArith:
        if (c == '(') ++level.parens;
        if (c == ')' && level.parens == 0 && s.compare(pos, 2, "))") == 0) {
          close(2);
          continue;
        }
        if (c == ')') --level.parens;
        break;
      case ShellLevel::kParen:
        if (c == '(') ++level.parens;
        if (c == ')') {
          if (level.parens > 0) {
            --level.parens;
          } else if (level.cases == 0) {
            close(1);
            continue;
          }
        }
        if (was_word_start && KeywordAt(s, pos, "case")) ++level.cases;
        if (was_word_start && KeywordAt(s, pos, "esac") && level.cases > 0) --level.cases;
        [[fallthrough]];
      case ShellLevel::kTop:
      case ShellLevel::kBacktick:
        if (c == '#' && was_word_start) {
          level.mode = ShellLevel::kComment;
          copy(1);
          continue;
        }
        if (c == '\n' && !level.here_docs.empty()) {
          level.mode = ShellLevel::kHereDoc;
          level.line_start = true;
          copy(1);
          continue;
        }
        if (s.compare(pos, 2, "<<") == 0) {
          copy(2);
          if (pos < s.size() && s[pos] == '<') {  // bash's <<< word: no here-document
            copy(1);
            continue;
          }
          HereDoc doc;
          if (pos < s.size() && s[pos] == '-') {
            doc.strip_tabs = true;
            copy(1);
          }
          while (pos < s.size() && IsBlank(s[pos])) copy(1);
          // The delimiter: the word with its quotes taken off; any quote
          // makes the text literal.
          while (pos < s.size() && !EndsWord(s[pos]) && !(s[pos] == '`' && level.opener == ShellLevel::kBacktick)) {
            if (const size_t n = PlaceholderAt(s, pos)) {
              ASSIGN_OR_RETURN(std::string text, replace(s.substr(pos + 1, n), ShellContext::kHereDocWord));
              out += text;
              pos += n + 2;
              continue;
            }
            const char q = s[pos];
            if (q == '\\') {
              doc.quoted = true;
              if (pos + 1 < s.size()) doc.delimiter += s[pos + 1];
              copy(2);
            } else if (q == '\'' || q == '"') {
              doc.quoted = true;
              copy(1);
              while (pos < s.size() && s[pos] != q) {
                if (q == '"' && s[pos] == '\\' && pos + 1 < s.size()) copy(1);
                doc.delimiter += s[pos];
                copy(1);
              }
              copy(1);
            } else {
              doc.delimiter += q;
              copy(1);
            }
          }
          level.here_docs.push_back(std::move(doc));
          level.word_start = false;
          continue;
        }
        break;
    }
    copy(1);
  }
  return out;
}

}  // namespace clusterd
