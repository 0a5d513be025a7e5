// Job files: every key, its defaults and its errors.
#include <catch2/catch.hpp>

#include "job_spec_test_util.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("a full job file fills every field of the spec", "[job_spec]") {
  JobSpec spec = Parsed(kFullExample);
  CHECK(spec.name() == "resnet-ddp");
  CHECK(Argv(spec) == std::vector<std::string>{"python3", "train.py", "--epochs", "3"});
  CHECK(spec.working_dir() == "/tmp");
  CHECK(spec.num_workers() == 4);
  CHECK(spec.resources_per_worker().amounts().size() == 4);
  CHECK(Res(spec, "CPU") == 2);
  CHECK(Res(spec, "GPU") == 1);
  CHECK(Res(spec, "memory") == 4.0 * 1024 * 1024 * 1024);
  CHECK(Res(spec, "trainium") == 0.5);
  CHECK(spec.placement() == SPREAD);
  CHECK(spec.env().at("NCCL_DEBUG") == "INFO");
  CHECK(spec.env().at("PORT") == "8080");
  CHECK(spec.env().at("VERBOSE") == "true");
  CHECK(std::vector<std::string>(spec.env_passthrough().begin(), spec.env_passthrough().end()) ==
        std::vector<std::string>{"DVC_*", "WANDB_API_KEY"});
  CHECK(spec.max_failures() == 3);
  CHECK(spec.checkpoint().dir() == "/shared/ckpt");
  CHECK(spec.checkpoint().keep() == 5);
  CHECK(spec.config_json() ==
        R"({"lr":0.1,"epochs":10,"layers":[64,32],"optimizer":{"name":"adam","betas":[0.9,0.999]},)"
        R"("amp":false,"note":null})");
  CHECK(spec.timeout_s() == 7200);
  CHECK(spec.dvclive_dir() == "dvclive");
  CHECK(spec.source_file() == "job.yaml");
  CHECK(ValidateJobSpec(spec, 4096).ok());
}

TEST_CASE("left-out keys take their defaults", "[job_spec]") {
  auto r = ParseJobSpec("entrypoint: python3 train.py --lr 0.1 && echo done\n", "jobs/mnist.yaml");
  REQUIRE(r.ok());
  CHECK(r->name() == "mnist");
  CHECK(Argv(*r) == std::vector<std::string>{"/bin/sh", "-c", "python3 train.py --lr 0.1 && echo done"});
  CHECK(r->num_workers() == 1);
  CHECK(r->resources_per_worker().amounts().size() == 1);
  CHECK(Res(*r, "CPU") == 1);
  CHECK(r->placement() == PACK);
  CHECK(r->max_failures() == 0);
  CHECK(r->checkpoint().keep() == 2);
  CHECK(r->checkpoint().dir().empty());
  CHECK(r->config_json().empty());
  CHECK(r->timeout_s() == 0);
  CHECK(r->working_dir().empty());
  CHECK(r->source_file() == "jobs/mnist.yaml");
}

TEST_CASE("given resources replace the CPU default, empty maps and lists are allowed", "[job_spec]") {
  JobSpec spec = Parsed("entrypoint: x\nresources_per_worker: {GPU: 1, TPU: 4, HPU: 1}\nenv:\nenv_passthrough:\nconfig:\n");
  CHECK(spec.resources_per_worker().amounts().size() == 3);
  CHECK(Res(spec, "CPU") == -1);
  CHECK(spec.env().empty());
  CHECK(spec.config_json() == "{}");
}

TEST_CASE("unknown keys are refused with a did-you-mean", "[job_spec]") {
  CHECK(ErrorOf("entrypoint: x\nname: a\nnum_worker: 2\n") ==
        "job.yaml:3:1: unknown key 'num_worker' (did you mean 'num_workers'?)");
  CHECK(ErrorOf("entrypoint: x\nEnv: {}\n") == "job.yaml:2:1: unknown key 'Env' (did you mean 'env'?)");
  CHECK(ErrorOf("entrypoint: x\ncheckpoint:\n  dir: /c\n  kep: 3\n") ==
        "job.yaml:4:3: unknown key 'checkpoint.kep' (did you mean 'checkpoint.keep'?)");
  CHECK(ErrorOf("entrypoint: x\ngpus: 1\n") ==
        "job.yaml:2:1: unknown key 'gpus' (known keys: name, entrypoint, working_dir, working_dir_mode, excludes, "
        "max_package_size, log_limit, num_workers, "
        "resources_per_worker, placement, env, env_passthrough, max_failures, restart_delay, checkpoint, config, "
        "timeout, time_limit, hang_timeout_s, "
        "dvclive, outputs, outputs_storage, run_as, preemptible, preemption_grace_s, max_preemptions, priority, "
        "borrow, tune, array)");
  CHECK(ErrorOf("entrypoint: x\nnum_workers: 1\nnum_workers: 2\n") ==
        "job.yaml:3:1: duplicate key 'num_workers' (first at line 2)");
}

TEST_CASE("resource errors name the key and line", "[job_spec]") {
  const std::string head = "name: x\nentrypoint: x\nnum_workers: 2\nmax_failures: 0\nplacement: PACK\nresources_per_worker:\n";
  CHECK(ErrorOf(head + "  GPU: -1\n") == "job.yaml:7:8: key 'resources_per_worker.GPU': expected a number >= 0, got -1");
  CHECK(ErrorOf(head + "  cpu: 2\n") ==
        "job.yaml:7:3: key 'resources_per_worker.cpu': unknown resource 'cpu' "
        "(did you mean 'CPU'? resource names are case-sensitive)");
  CHECK(ErrorOf(head + "  num_gpus: 1\n") ==
        "job.yaml:7:3: key 'resources_per_worker.num_gpus': unknown resource 'num_gpus' "
        "(did you mean 'GPU'? resource names are case-sensitive)");
  CHECK(ErrorOf(head + "  CPU: two\n") == "job.yaml:7:8: key 'resources_per_worker.CPU': expected a number, got 'two'");
  CHECK(ErrorOf(head + "  CPU: .inf\n") == "job.yaml:7:8: key 'resources_per_worker.CPU': expected a number, got '.inf'");
  CHECK(ErrorOf(head + "  GPU: 1.5\n") ==
        "job.yaml:7:8: key 'resources_per_worker.GPU': a GPU count above 1 must be a whole number, got 1.5");
  CHECK(ErrorOf(head + "  memory: 4 parsecs\n") ==
        "job.yaml:7:11: key 'resources_per_worker.memory': expected bytes as a number or a string like '4Gi', "
        "'512Mi', '2G', got '4 parsecs'");
  CHECK(ErrorOf(head + "  memory: -1\n") ==
        "job.yaml:7:11: key 'resources_per_worker.memory': expected a number >= 0, got -1");
  CHECK(ErrorOf(head + "  [a]: 1\n") ==
        "job.yaml:7:3: key 'resources_per_worker': a key must be a plain name, got a list");
  CHECK(ErrorOf("entrypoint: x\nresources_per_worker: [CPU]\n") ==
        "job.yaml:2:23: key 'resources_per_worker': expected a map, got a list");
}

TEST_CASE("memory takes byte counts and binary or decimal units", "[job_spec]") {
  const double Ki = 1024, Mi = Ki * Ki, Gi = Mi * Ki;
  CHECK(*ParseMemory("4Gi") == 4 * Gi);
  CHECK(*ParseMemory("512Mi") == 512 * Mi);
  CHECK(*ParseMemory("2G") == 2e9);
  CHECK(*ParseMemory("100M") == 1e8);
  CHECK(*ParseMemory("1.5Gi") == 1.5 * Gi);
  CHECK(*ParseMemory("4GiB") == 4 * Gi);
  CHECK(*ParseMemory("2 gb") == 2e9);
  CHECK(*ParseMemory("64Ki") == 64 * Ki);
  CHECK(*ParseMemory("1Ti") == Gi * Ki);
  CHECK(*ParseMemory("1024") == 1024);
  CHECK(*ParseMemory("1024B") == 1024);
  for (const char* bad : {"", "Gi", "4Gx", "-1Gi", "4 parsecs", "1e400", "inf", "4iG"}) {
    INFO(bad);
    CHECK_FALSE(ParseMemory(bad).ok());
  }
  CHECK(ParseMemory("4Gx").status().message() ==
        "expected bytes as a number or a string like '4Gi', '512Mi', '2G', got '4Gx'");
  CHECK(Res(Parsed("entrypoint: x\nresources_per_worker: {memory: 1073741824}\n"), "memory") == Gi);
  CHECK(Res(Parsed("entrypoint: x\nresources_per_worker: {memory: 512Mi}\n"), "memory") == 512 * Mi);
}

TEST_CASE("timeout takes seconds or a duration with units", "[job_spec]") {
  CHECK(*ParseDuration("90s") == 90);
  CHECK(*ParseDuration("10m") == 600);
  CHECK(*ParseDuration("2h") == 7200);
  CHECK(*ParseDuration("1d") == 86400);
  CHECK(*ParseDuration("1h30m") == 5400);
  CHECK(*ParseDuration("1h 30m 15s") == 5415);
  CHECK(*ParseDuration("1.5h") == 5400);
  CHECK(*ParseDuration("250ms") == 0.25);
  CHECK(*ParseDuration("45") == 45);
  CHECK(*ParseDuration("0") == 0);
  for (const char* bad : {"", "abc", "-5", "10x", "1h-5m", "m", "10 minutes", "1e999"}) {
    INFO(bad);
    CHECK_FALSE(ParseDuration(bad).ok());
  }
  CHECK(Parsed("entrypoint: x\ntimeout: 45\n").timeout_s() == 45);
  CHECK(Parsed("entrypoint: x\ntimeout: 2.5\n").timeout_s() == 2.5);
  CHECK(Parsed("entrypoint: x\ntimeout: 10m\n").timeout_s() == 600);
  CHECK(ErrorOf("entrypoint: x\ntimeout: 10 minutes\n") ==
        "job.yaml:2:10: key 'timeout': expected seconds as a number or a string like '90s', '10m', '2h', "
        "'1h30m', got '10 minutes'");
  CHECK(ErrorOf("entrypoint: x\ntimeout: -5\n") ==
        "job.yaml:2:10: key 'timeout': expected seconds as a number or a string like '90s', '10m', '2h', "
        "'1h30m', got '-5'");
  CHECK(ErrorOf("entrypoint: x\ntimeout: [1]\n") ==
        "job.yaml:2:10: key 'timeout': expected a duration like 90, '90s', '10m' or '2h', got a list");
}

TEST_CASE("config becomes compact JSON typed by YAML's core schema", "[job_spec]") {
  const std::string yaml = R"(entrypoint: x
config:
  int: 42
  neg: -7
  hex: 0x1F
  float: 2.0
  exp: 1e-3
  t: true
  f: False
  n: null
  tilde: ~
  empty:
  quoted_int: "42"
  single: '3.5'
  yes_is_a_string: yes
  text: hello world
  escapes: "tab\there \"q\" back\\slash\nnewline"
  unicode: "héllo ✓"
  list: [1, two, 3.5, [true], {}]
  nested: {a: {b: {c: []}}}
  "key with spaces": 1
  version: 1.10.2
)";
  CHECK(Parsed(yaml).config_json() ==
        R"({"int":42,"neg":-7,"hex":31,"float":2.0,"exp":0.001,"t":true,"f":false,"n":null,"tilde":null,)"
        R"("empty":null,"quoted_int":"42","single":"3.5","yes_is_a_string":"yes","text":"hello world",)"
        R"("escapes":"tab\there \"q\" back\\slash\nnewline","unicode":"héllo ✓","list":[1,"two",3.5,[true],{}],)"
        R"("nested":{"a":{"b":{"c":[]}}},"key with spaces":1,"version":"1.10.2"})");
}

TEST_CASE("config refuses what JSON cannot hold and anchors that explode", "[job_spec]") {
  CHECK(ErrorOf("entrypoint: x\nconfig:\n  lr: .inf\n") ==
        "job.yaml:3:7: key 'config.lr': JSON has no infinity or NaN, got '.inf' (quote it to pass a string)");
  CHECK(ErrorOf("entrypoint: x\nconfig: [1, 2]\n") == "job.yaml:2:9: key 'config': expected a map, got a list");
  CHECK(ErrorOf("entrypoint: x\nconfig:\n  a: 1\n  a: 2\n") == "job.yaml:4:3: duplicate key 'config.a' (first at line 3)");
  CHECK(ErrorOf("entrypoint: x\nconfig:\n  ? [a]\n  : 1\n") ==
        "job.yaml:3:5: key 'config': a key must be a plain name, got a list");
  // An anchor that refers to itself makes a cycle in yaml-cpp's tree.
  CHECK(ErrorOf("entrypoint: x\nconfig:\n  loop: &a [*a]\n").find("nested more than 64 levels deep") !=
        std::string::npos);
  // "Billion laughs": each level doubles the expansion.
  std::string bomb = "entrypoint: x\nconfig:\n  l0: &l0 [aaaaaaaaaaaaaaaa, aaaaaaaaaaaaaaaa]\n";
  for (int i = 1; i < 40; ++i) bomb += fmt::format("  l{}: &l{} [*l{}, *l{}]\n", i, i, i - 1, i - 1);
  auto start = std::chrono::steady_clock::now();
  CHECK(ErrorOf(bomb).find("expands to more than 1048576 bytes of JSON") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("entrypoint is required and may not be empty", "[job_spec]") {
  CHECK(ErrorOf("num_workers: 2\n") == "job.yaml: missing required key 'entrypoint'");
  CHECK(ErrorOf("entrypoint: ''\n") == "job.yaml:1:13: key 'entrypoint': is empty; give a shell command or a list of arguments");
  CHECK(ErrorOf("entrypoint: '   '\n") == "job.yaml:1:13: key 'entrypoint': is empty; give a shell command or a list of arguments");
  CHECK(ErrorOf("entrypoint: []\n") == "job.yaml:1:13: key 'entrypoint': is empty; give a shell command or a list of arguments");
  CHECK(ErrorOf("entrypoint: ['', x]\n") == "job.yaml:1:13: key 'entrypoint': the program (the first argument) is empty");
  CHECK(ErrorOf("entrypoint:\n") == "job.yaml:1:1: key 'entrypoint': expected a shell command or a list of arguments, got nothing");
  CHECK(ErrorOf("entrypoint: {python: x}\n") ==
        "job.yaml:1:13: key 'entrypoint': expected a shell command or a list of arguments, got a map");
  CHECK(ErrorOf("entrypoint: [python3, [x]]\n") == "job.yaml:1:23: key 'entrypoint[1]': expected a string, got a list");
  CHECK(Argv(Parsed("entrypoint: [python3, -c, 'print(1)', 3, 1.5, '']\n")) ==
        std::vector<std::string>{"python3", "-c", "print(1)", "3", "1.5", ""});
}

TEST_CASE("wrong types and out-of-range numbers are refused", "[job_spec]") {
  CHECK(ErrorOf("entrypoint: x\nnum_workers: abc\n") == "job.yaml:2:14: key 'num_workers': expected an integer, got 'abc'");
  CHECK(ErrorOf("entrypoint: x\nnum_workers: 2.5\n") == "job.yaml:2:14: key 'num_workers': expected an integer, got '2.5'");
  CHECK(ErrorOf("entrypoint: x\nnum_workers: 0\n") ==
        "job.yaml:2:14: key 'num_workers': expected an integer between 1 and 4096, got 0");
  CHECK(ErrorOf("entrypoint: x\nnum_workers: -3\n") ==
        "job.yaml:2:14: key 'num_workers': expected an integer between 1 and 4096, got -3");
  CHECK(ErrorOf("entrypoint: x\nnum_workers: 100000\n") ==
        "job.yaml:2:14: key 'num_workers': expected an integer between 1 and 4096, got 100000");
  CHECK(ErrorOf("entrypoint: x\nnum_workers: 99999999999999999999\n") ==
        "job.yaml:2:14: key 'num_workers': '99999999999999999999' is too large");
  CHECK(ErrorOf("entrypoint: x\nnum_workers: 9\n", {}, 8) ==
        "job.yaml:2:14: key 'num_workers': expected an integer between 1 and 8, got 9");
  CHECK(Parsed("entrypoint: x\nnum_workers: 1e3\n").num_workers() == 1000);
  CHECK(ErrorOf("entrypoint: x\nname: [a, b]\n") == "job.yaml:2:7: key 'name': expected a string, got a list");
  CHECK(ErrorOf("entrypoint: x\nname: a/b\n") ==
        "job.yaml:2:7: key 'name': may not contain '/' or control characters, got \"a/b\"");
  CHECK(ErrorOf("entrypoint: x\nname: " + std::string(129, 'n') + "\n") ==
        "job.yaml:2:7: key 'name': is 129 bytes long (UTF-8), more than the 128 a name may be");
  CHECK(ErrorOf("entrypoint: x\nmax_failures: -1\n") == "job.yaml:2:15: key 'max_failures': expected an integer >= 0, got -1");
  CHECK(ErrorOf("entrypoint: x\nmax_failures: 3000000000\n") ==
        "job.yaml:2:15: key 'max_failures': expected an integer up to 2147483647, got 3000000000");
  CHECK(ErrorOf("entrypoint: x\ncheckpoint: {keep: -2}\n") ==
        "job.yaml:2:20: key 'checkpoint.keep': expected an integer >= 0, got -2");
  CHECK(ErrorOf("entrypoint: x\ncheckpoint: /ckpt\n") == "job.yaml:2:13: key 'checkpoint': expected a map, got '/ckpt'");
  CHECK(ErrorOf("entrypoint: x\nenv_passthrough: DVC_*\n") ==
        "job.yaml:2:18: key 'env_passthrough': expected a list, got 'DVC_*'");
  CHECK(ErrorOf("entrypoint: x\nenv_passthrough: ['']\n") ==
        "job.yaml:2:19: key 'env_passthrough[0]': is an empty pattern; write 'DVC_*' to pass every DVC_ variable");
  CHECK(ErrorOf("entrypoint: x\ndvclive: {a: 1}\n") == "job.yaml:2:10: key 'dvclive': expected a string, got a map");
}

TEST_CASE("placement is case-insensitive and suggests a fix", "[job_spec]") {
  CHECK(Parsed("entrypoint: x\nplacement: Spread\n").placement() == SPREAD);
  CHECK(Parsed("entrypoint: x\nplacement: strict-spread\n").placement() == STRICT_SPREAD);
  CHECK(Parsed("entrypoint: x\nplacement: STRICT_SPREAD\n").placement() == STRICT_SPREAD);
  CHECK(ErrorOf("entrypoint: x\nplacement: pak\n") ==
        "job.yaml:2:12: key 'placement': expected PACK, SPREAD or STRICT_SPREAD, got 'pak' (did you mean 'PACK'?)");
  CHECK(ErrorOf("entrypoint: x\nplacement: anywhere\n") ==
        "job.yaml:2:12: key 'placement': expected PACK, SPREAD or STRICT_SPREAD, got 'anywhere'");
}

TEST_CASE("env values are strings and names must be variable names", "[job_spec]") {
  JobSpec spec = Parsed("entrypoint: x\nenv: {A: 1, B: 2.50, C: yes, D: '', E: null-ish}\n");
  CHECK(spec.env().at("A") == "1");
  CHECK(spec.env().at("B") == "2.50");
  CHECK(spec.env().at("C") == "yes");
  CHECK(spec.env().at("D").empty());
  CHECK(spec.env().at("E") == "null-ish");
  CHECK(ErrorOf("entrypoint: x\nenv:\n  1FOO: a\n") ==
        "job.yaml:3:3: key 'env.1FOO': '1FOO' is not a variable name (letters, digits and '_', not starting with a digit)");
  CHECK(ErrorOf("entrypoint: x\nenv:\n  RANK: 3\n") ==
        "job.yaml:3:3: key 'env.RANK': RANK is set by clusterd for each worker and cannot be set here");
  CHECK(ErrorOf("entrypoint: x\nenv:\n  FOO: [a]\n") == "job.yaml:3:8: key 'env.FOO': expected a string, got a list");
  CHECK(ErrorOf("entrypoint: x\nenv:\n  FOO:\n") == "job.yaml:3:3: key 'env.FOO': expected a string, got nothing");
  CHECK(ErrorOf("entrypoint: x\nenv:\n  FOO: \"a\\0b\"\n") == "job.yaml:3:8: key 'env.FOO': contains a NUL character");
}

TEST_CASE("working_dir is resolved against the current directory and must exist", "[job_spec]") {
  TempDir dir;
  fs::create_directories(dir.path / "proj" / "src");
  std::string file = dir.Write("job.yaml", "entrypoint: x\nworking_dir: proj/src/../src\n");
  InDir(dir.path, [&] {
    auto r = LoadJobSpecFile("job.yaml");
    INFO(r.status().message());
    REQUIRE(r.ok());
    CHECK(r->working_dir() == (fs::current_path() / "proj" / "src").string());
    auto missing = LoadJobSpecFile("job.yaml", {"working_dir=data"});
    CHECK(missing.status().message() == "--set working_dir=data: working_dir 'data' does not exist (looked for " +
                                            (fs::current_path() / "data").string() + ")");
  });
  std::string bad = dir.Write("bad.yaml", "entrypoint: x\nworking_dir: " + file + "\n");
  CHECK(LoadJobSpecFile(bad).status().message() ==
        bad + ":2:14: key 'working_dir': working_dir '" + file + "' is not a directory");
  // ParseJobSpec keeps the path as written: the file system it would be
  // checked against is not known there.
  CHECK(Parsed("entrypoint: x\nworking_dir: data\n").working_dir() == "data");
}

TEST_CASE("set overrides (--set) apply to the tree before conversion", "[job_spec]") {
  const std::string base = "entrypoint: python3 a.py\nconfig:\n  lr: 0.1\n  epochs: 3\n";
  JobSpec spec = Parsed(base, {"num_workers=4", "resources_per_worker.GPU=1", "env.FOO=bar",
                               R"(entrypoint=["python3","x.py"])", "config.lr=0.01", "checkpoint.keep=5",
                               "placement=spread", "timeout=10m", "num_workers=6"});
  CHECK(spec.num_workers() == 6);  // the last one wins
  CHECK(Res(spec, "GPU") == 1);
  CHECK(spec.env().at("FOO") == "bar");
  CHECK(Argv(spec) == std::vector<std::string>{"python3", "x.py"});
  CHECK(spec.config_json() == R"({"lr":0.01,"epochs":3})");  // order kept
  CHECK(spec.checkpoint().keep() == 5);
  CHECK(spec.placement() == SPREAD);
  CHECK(spec.timeout_s() == 600);
  CHECK(Argv(Parsed("", {"entrypoint=echo hi"})) == std::vector<std::string>{"/bin/sh", "-c", "echo hi"});
}

TEST_CASE("set override (--set) errors name the override", "[job_spec]") {
  const std::string base = "entrypoint: x\nenv:\n  FOO: bar\n";
  CHECK(ErrorOf(base, {"num_workers=abc"}) == "--set num_workers=abc: expected an integer, got 'abc'");
  CHECK(ErrorOf(base, {"resources_per_worker.GPU=-1"}) == "--set resources_per_worker.GPU=-1: expected a number >= 0, got -1");
  CHECK(ErrorOf(base, {"num_worker=4"}) == "--set num_worker=4: unknown key 'num_worker' (did you mean 'num_workers'?)");
  CHECK(ErrorOf(base, {"chekpoint.keep=4"}) ==
        "--set chekpoint.keep=4: unknown key 'chekpoint' (did you mean 'checkpoint'?)");
  CHECK(ErrorOf(base, {"entrypoint=[python3, [x]]"}) ==
        "--set entrypoint=[python3, [x]]: key 'entrypoint[1]': expected a string, got a list");
  CHECK(ErrorOf(base, {"env.FOO.x=1"}) == "--set env.FOO.x=1: key 'env.FOO' is 'bar', not a map to set 'x' in");
  CHECK(ErrorOf(base, {"num_workers"}) == "--set num_workers: expected key=value, like --set num_workers=4");
  CHECK(ErrorOf(base, {"=4"}) == "--set =4: expected key=value, like --set num_workers=4");
  CHECK(ErrorOf(base, {"env..FOO=1"}) == "--set env..FOO=1: 'env..FOO' has an empty part; expected a key like env.FOO");
  CHECK(ErrorOf(base, {"entrypoint=[a"}) ==
        "--set entrypoint=[a: the value is not valid YAML: end of sequence flow not found at column 1");
  CHECK(ErrorOf(base, {"env.FOO="}) == "--set env.FOO=: expected a string, got nothing");
  // A file error stays with the file even when overrides are given.
  CHECK(ErrorOf(base + "num_workers: 0\n", {"env.BAR=1"}) ==
        "job.yaml:4:14: key 'num_workers': expected an integer between 1 and 4096, got 0");
}

TEST_CASE("ValidateJobSpec checks a spec that came over the wire", "[job_spec]") {
  JobSpec good = Parsed(kFullExample);
  REQUIRE(ValidateJobSpec(good, 4096).ok());
  auto error = [&](auto mutate, int max_workers = 4096) {
    JobSpec spec = good;
    mutate(&spec);
    Status st = ValidateJobSpec(spec, max_workers);
    REQUIRE(st.code() == Status::Code::kInvalidArgument);
    return st.message();
  };
  CHECK(error([](JobSpec* s) { s->clear_name(); }) == "key 'name': must not be empty");
  CHECK(error([](JobSpec* s) { s->clear_entrypoint(); }) ==
        "key 'entrypoint': is empty; give a shell command or a list of arguments");
  CHECK(error([](JobSpec* s) { s->set_entrypoint(0, ""); }) == "key 'entrypoint': the program (the first argument) is empty");
  CHECK(error([](JobSpec* s) { s->set_num_workers(0); }) == "key 'num_workers': expected an integer between 1 and 4096, got 0");
  CHECK(error([](JobSpec* s) {}, 2) == "key 'num_workers': expected an integer between 1 and 2, got 4");
  CHECK(error([](JobSpec* s) { (*s->mutable_resources_per_worker()->mutable_amounts())["GPU"] = -1; }) ==
        "key 'resources_per_worker.GPU': expected a number >= 0, got -1");
  CHECK(error([](JobSpec* s) { (*s->mutable_resources_per_worker()->mutable_amounts())["CPU"] = NAN; }) ==
        "key 'resources_per_worker.CPU': expected a number >= 0, got nan");
  CHECK(error([](JobSpec* s) { (*s->mutable_resources_per_worker()->mutable_amounts())["Memory"] = 1; }) ==
        "key 'resources_per_worker.Memory': unknown resource 'Memory' (did you mean 'memory'? resource names are "
        "case-sensitive)");
  CHECK(error([](JobSpec* s) { s->set_placement(static_cast<Placement>(7)); }) == "key 'placement': unknown placement 7");
  CHECK(error([](JobSpec* s) { (*s->mutable_env())["A-B"] = "1"; }) ==
        "key 'env.A-B': 'A-B' is not a variable name (letters, digits and '_', not starting with a digit)");
  CHECK(error([](JobSpec* s) { (*s->mutable_env())["WORLD_SIZE"] = "1"; }) ==
        "key 'env.WORLD_SIZE': WORLD_SIZE is set by clusterd for each worker and cannot be set here");
  CHECK(error([](JobSpec* s) { s->set_max_failures(-1); }) == "key 'max_failures': expected an integer >= 0, got -1");
  CHECK(error([](JobSpec* s) { s->mutable_checkpoint()->set_keep(-1); }) == "key 'checkpoint.keep': expected an integer >= 0, got -1");
  CHECK(error([](JobSpec* s) { s->set_config_json("[1]"); }) == "key 'config': is not a JSON object");
  CHECK(error([](JobSpec* s) { s->set_timeout_s(-1); }) == "key 'timeout': expected a duration >= 0 seconds, got -1");
  CHECK(error([](JobSpec* s) { s->set_working_dir(std::string("a\0b", 3)); }) == "key 'working_dir': contains a NUL character");
}

TEST_CASE("config/example_job.yaml parses", "[job_spec]") {
  fs::path example = fs::path(CLUSTERD_SOURCE_DIR) / "config" / "example_job.yaml";
  std::ifstream in(example);
  REQUIRE(in);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto r = ParseJobSpec(text, "example_job.yaml");
  INFO(r.status().message());
  REQUIRE(r.ok());
  CHECK(r->name() == "fashion-mnist-ddp");
  CHECK(r->num_workers() == 2);
  CHECK(Res(*r, "memory") == 2.0 * 1024 * 1024 * 1024);
  CHECK(r->config_json() == R"({"lr":0.01,"batch_size":64,"layers":[128,64],"amp":false})");
  CHECK(r->timeout_s() == 3600);
  CHECK(r->restart_delay().initial_s() == 5);
}
