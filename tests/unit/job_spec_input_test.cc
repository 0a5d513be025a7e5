// Job files as input: malformed YAML, binary or huge files, unreadable files,
// YAML 1.2 numbers and did-you-mean suggestions.
#include <catch2/catch.hpp>

#include "job_spec_test_util.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("the top level must be one map", "[job_spec]") {
  CHECK(ErrorOf("- a\n- b\n") ==
        "job.yaml:1:1: expected a map of keys (name, entrypoint, num_workers, ...) at the top level, got a list");
  CHECK(ErrorOf("just words\n") ==
        "job.yaml:1:1: expected a map of keys (name, entrypoint, num_workers, ...) at the top level, got a scalar");
  CHECK(ErrorOf("") == "job.yaml: file is empty; a job needs at least an entrypoint");
  CHECK(ErrorOf("# only a comment\n") == "job.yaml: file is empty; a job needs at least an entrypoint");
  CHECK(ErrorOf("entrypoint: x\n---\nentrypoint: y\n") ==
        "job.yaml:2:1: a job file holds one YAML document; a second starts here");
}

TEST_CASE("malformed YAML reports the parser's line and column", "[job_spec]") {
  CHECK(ErrorOf("entrypoint: x\nnum_workers: [1, 2\n") == "job.yaml:3:1: invalid YAML: end of sequence flow not found");
  CHECK(ErrorOf("entrypoint: x\n\tnum_workers: 2\n") == "job.yaml:2:1: invalid YAML: illegal tab when looking for indentation");
  CHECK(ErrorOf("entrypoint: x\nname: a: b\n") == "job.yaml:2:8: invalid YAML: illegal map value");
  CHECK(ErrorOf("entrypoint: x\n  num_workers: 2\n") == "job.yaml:2:14: invalid YAML: illegal map value");
  CHECK(ErrorOf("entrypoint: *nope\n") == "job.yaml:1:13: invalid YAML: the referenced anchor is not defined");
  // yaml-cpp 0.7's LoadAll loops forever on this one (its issue #1040).
  CHECK(ErrorOf("# comment\n, stray comma\nentrypoint: x\n") == "job.yaml:2:1: invalid YAML: unexpected ','");
  auto start = std::chrono::steady_clock::now();
  CHECK(ErrorOf(std::string(100000, '[')) == "job.yaml:1:1: invalid YAML: nested too deeply");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("binary content is refused before parsing", "[job_spec]") {
  CHECK(ErrorOf(std::string("entrypoint: a\0b\n", 16)) ==
        "job.yaml:1:14: not a text file (byte 0x00); a job file is UTF-8 YAML");
  CHECK(ErrorOf("entrypoint: x\nname: \xff\xfe\n") == "job.yaml:2:7: not a text file (byte 0xff); a job file is UTF-8 YAML");
  CHECK(ErrorOf("entrypoint: x\nname: \xc0\xaf\n") == "job.yaml:2:7: not a text file (byte 0xc0); a job file is UTF-8 YAML");
  CHECK(Parsed("\xef\xbb\xbfname: caf\xc3\xa9\nentrypoint: x\n").name() == "caf\xc3\xa9");  // BOM and UTF-8 are fine
}

TEST_CASE("a 10 MB file of random bytes is refused at once", "[job_spec]") {
  TempDir dir;
  std::mt19937 rng(42);
  std::string noise(10 * 1024 * 1024, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  std::string path = dir.Write("noise.yaml", noise);
  auto start = std::chrono::steady_clock::now();
  auto r = LoadJobSpecFile(path);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == path + ": file is 10485760 bytes, larger than the 1 MiB a job file may be");
  CHECK(ParseJobSpec(noise, "noise.yaml").status().message() ==
        "noise.yaml: file is 10485760 bytes, larger than the 1 MiB a job file may be");
  // Just under the cap, random bytes are caught as binary, not parsed.
  noise.resize(kMaxJobFileBytes);
  auto small = ParseJobSpec(noise, "noise.yaml");
  REQUIRE_FALSE(small.ok());
  CHECK(small.status().message().find("not a text file") != std::string::npos);
  // Random printable text reaches the YAML parser and fails there.
  std::string printable(kMaxJobFileBytes, ' ');
  for (char& c : printable) c = static_cast<char>(' ' + rng() % 95);
  CHECK_FALSE(ParseJobSpec(printable, "noise.yaml").ok());
  // A device has no size to ask; reading stops one byte past the cap.
  CHECK(LoadJobSpecFile("/dev/zero").status().message() == "/dev/zero: file is larger than the 1 MiB a job file may be");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
}

TEST_CASE("LoadJobSpecFile reports files it cannot read", "[job_spec]") {
  TempDir dir;
  auto missing = LoadJobSpecFile((dir.path / "nope.yaml").string());
  CHECK(missing.status().code() == Status::Code::kNotFound);
  CHECK(missing.status().message() == (dir.path / "nope.yaml").string() + ": cannot open: No such file or directory");
  CHECK(LoadJobSpecFile(dir.path.string()).status().message() == dir.path.string() + ": is a directory, not a job file");
  auto ok = LoadJobSpecFile(dir.Write("train.yaml", "entrypoint: x\n"));
  REQUIRE(ok.ok());
  CHECK(ok->name() == "train");
  CHECK(ok->source_file() == (dir.path / "train.yaml").string());
}

TEST_CASE("number parsing follows YAML 1.2", "[job_spec]") {
  CHECK(ParseInteger("42") == 42);
  CHECK(ParseInteger("+3") == 3);
  CHECK(ParseInteger("-9223372036854775808") == INT64_MIN);
  CHECK(ParseInteger("0x1F") == 31);
  CHECK(ParseInteger("0o17") == 15);
  for (const char* bad : {"", "-", "1.0", "9223372036854775808", "0x", "-0x1", "1_000", " 1", "0xG"}) {
    INFO(bad);
    CHECK_FALSE(ParseInteger(bad).has_value());
  }
  CHECK(ParseDecimal(".5") == 0.5);
  CHECK(ParseDecimal("5.") == 5.0);
  CHECK(ParseDecimal("+1e3") == 1000.0);
  for (const char* bad : {"", ".", "e3", "inf", "nan", "1e", "1.2.3", "0x10", "1e999"}) {
    INFO(bad);
    CHECK_FALSE(ParseDecimal(bad).has_value());
  }
}

TEST_CASE("did-you-mean suggests close names only", "[job_spec]") {
  CHECK(EditDistance("num_worker", "num_workers") == 1);
  CHECK(EditDistance("kitten", "sitting") == 3);
  CHECK(EditDistance("CPU", "cpu") == 0);
  const std::vector<std::string> keys = {"num_workers", "name", "env", "timeout"};
  CHECK(DidYouMean("num_workrs", keys) == "num_workers");
  CHECK(DidYouMean("nmae", keys) == "");  // a swap is two edits; too far for a four-letter word
  CHECK(DidYouMean("nam", keys) == "name");
  CHECK(DidYouMean("timeuot", keys) == "timeout");
  CHECK(DidYouMean("resources", keys) == "");
}


TEST_CASE("array: count and max_concurrent, each error at its line", "[job_spec][array]") {
  JobSpec spec = Parsed("entrypoint: x\narray: {count: 10000, max_concurrent: 16}\n");
  CHECK(spec.array().count() == 10000);
  CHECK(spec.array().max_concurrent() == 16);
  CHECK(Parsed("entrypoint: x\narray:\n  count: 3\n").array().max_concurrent() == 0);
  CHECK(ErrorOf("entrypoint: x\narray: 5\n") ==
        "job.yaml:2:8: key 'array': expected a map with count and, optionally, max_concurrent, got '5'");
  CHECK(ErrorOf("entrypoint: x\narray:\n  count: 100001\n") ==
        "job.yaml:3:10: key 'array.count': expected an integer between 1 and 100000, got 100001");
  CHECK(ErrorOf("entrypoint: x\narray:\n  count: 2\n  max_concurent: 1\n") ==
        "job.yaml:4:3: unknown key 'array.max_concurent' (did you mean 'array.max_concurrent'?)");
  // A limit above the count limits nothing (Slurm's --array=0-1%3).
  CHECK(Parsed("entrypoint: x\narray: {count: 2, max_concurrent: 3}\n").array().max_concurrent() == 3);
  CHECK(ErrorOf("entrypoint: x\narray: {max_concurrent: 3}\n") ==
        "job.yaml:2:8: key 'array': missing required key 'count' (how many jobs the array makes)");
}

TEST_CASE("an entrypoint or env no exec could carry is refused naming its key", "[job_spec]") {
  const std::string big(128 * 1024, 'x');
  CHECK(ErrorOf("entrypoint: [echo, " + big + "]\n") ==
        "job.yaml: key 'entrypoint[1]': is 131072 bytes; the kernel starts no program with an argument or variable "
        "of 131072 bytes or more");
  // NAME=value is what the kernel measures: with its NUL, 131072 bytes fit and one more does not.
  CHECK(ErrorOf("entrypoint: x\nenv: {V: " + std::string(128 * 1024 - 2, 'x') + "}\n") ==
        "job.yaml: key 'env.V': is 131072 bytes; the kernel starts no program with an argument or variable of "
        "131072 bytes or more");
  CHECK(Parsed("entrypoint: x\nenv: {V: " + std::string(128 * 1024 - 3, 'x') + "}\n").env().at("V").size() ==
        128 * 1024 - 3);
  // A job file is at most 1 MiB, but a spec may come over RPC.
  JobSpec spec = Parsed("entrypoint: x\n");
  for (int i = 0; i < 9; ++i) (*spec.mutable_env())[fmt::format("V{}", i)] = std::string(120 * 1024, 'x');
  CHECK(ValidateJobSpec(spec).message() ==
        "the entrypoint and env come to 1106065 bytes; a job's arguments and environment may take 1048576 "
        "(the kernel's limit is shared with what each node adds)");
}
