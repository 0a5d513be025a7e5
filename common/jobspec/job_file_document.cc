#include "common/jobspec/job_file_document.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_units.h"

namespace clusterd::job_spec_internal {

namespace {

namespace fs = std::filesystem;

static_assert(kMaxJobFileBytes == 1 << 20, "the messages below say 1 MiB");

std::string TooLarge(const std::string& file_name, std::optional<uintmax_t> size) {
  return fmt::format("{}: file is {}larger than the 1 MiB a job file may be", file_name,
                     size ? fmt::format("{} bytes, ", *size) : "");
}

// Records where documents start. Used instead of YAML::LoadAll, which
// loops forever, allocating, on some malformed input such as a line
// starting with ',' (yaml-cpp issue #1040, fixed after 0.7 by PR #1319):
// the parser then stops consuming tokens and reports the same empty
// document again and again.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;
  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// The file's one document; refuses a second, and input the parser is stuck on.
Result<YAML::Node> LoadDocument(const std::string& text, const Locator& loc) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts starts;
    parser.HandleNextDocument(starts);
    if (parser.HandleNextDocument(starts)) {
      const YAML::Mark& second = starts.marks.back();
      if (second.pos == starts.marks.front().pos) {
        return loc.ErrorNoKey(second, "", fmt::format("invalid YAML: unexpected '{}'", text[second.pos]));
      }
      return loc.ErrorNoKey(second, "", "a job file holds one YAML document; a second starts here");
    }
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    return loc.ErrorNoKey(e.mark, "", "invalid YAML: nested too deeply");
  } catch (const YAML::Exception& e) {
    return loc.ErrorNoKey(e.mark, "", "invalid YAML: " + e.msg);
  }
}

}  // namespace

// Reads at most one byte more than a job file may hold: enough to refuse
// /dev/urandom or a 10 GB file without reading it.
Result<std::string> ReadCapped(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Status::InvalidArgument(path + ": is a directory, not a job file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  uintmax_t size = fs::is_regular_file(path, ec) ? fs::file_size(path, ec) : 0;
  if (!ec && size > kMaxJobFileBytes) return Status::InvalidArgument(TooLarge(path, size));
  std::string text(kMaxJobFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return Status::IOError(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxJobFileBytes) return Status::InvalidArgument(TooLarge(path, std::nullopt));
  return text;
}

Status CheckIsText(const std::string& text, const Locator& loc) {
  if (text.size() > kMaxJobFileBytes) return Status::InvalidArgument(TooLarge(loc.file_name(), text.size()));
  auto bad = FindNonText(text);
  if (!bad) return Status::Ok();
  const size_t line_start = text.rfind('\n', *bad) == std::string::npos ? 0 : text.rfind('\n', *bad) + 1;
  YAML::Mark mark;
  mark.line = static_cast<int>(std::count(text.begin(), text.begin() + *bad, '\n'));
  mark.column = static_cast<int>(*bad - line_start);
  return loc.ErrorNoKey(mark, "", fmt::format("not a text file (byte 0x{:02x}); a job file is UTF-8 YAML",
                                              static_cast<unsigned char>(text[*bad])));
}

Result<YAML::Node> LoadTree(const std::string& text, const Locator& loc, const std::vector<Override>& overrides) {
  ASSIGN_OR_RETURN(YAML::Node root, LoadDocument(text, loc));
  if (root.IsNull()) {
    if (overrides.empty()) return loc.FileError("file is empty; a job needs at least an entrypoint");
    root.reset(YAML::Node(YAML::NodeType::Map));
  }
  if (!root.IsMap()) {
    return loc.ErrorNoKey(root.Mark(), "", fmt::format("expected a map of keys (name, entrypoint, num_workers, ...) "
                                                       "at the top level, got {}", root.IsSequence() ? "a list" : "a scalar"));
  }
  for (const auto& o : overrides) RETURN_IF_ERROR(ApplyOverride(o, &root));
  return root;
}

}  // namespace clusterd::job_spec_internal
