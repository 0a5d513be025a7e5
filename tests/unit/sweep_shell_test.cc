// A sweep's values in a string entrypoint (sh -c) are data, never code:
// every trial of a corpus of shell contexts x hostile values is run by
// /bin/sh as a rank runs it, with the trial's environment, and must print
// exactly the value where the placeholder stood and run nothing of it.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/search_space.h"
#include "common/text.h"

extern char** environ;

using namespace clusterd;

namespace {

struct ShellRun {
  std::string out;
  int status = -1;
};

// /bin/sh -c `command` in `dir`, stdin from /dev/null, with `env` over this
// process's environment: what a rank of the trial gets.
ShellRun RunShell(const std::string& command, const std::map<std::string, std::string>& env, const std::string& dir,
                  std::string sh = "/bin/sh") {
  std::vector<std::string> strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (env.count(entry.substr(0, entry.find('='))) == 0) strings.push_back(entry);
  }
  for (const auto& [key, value] : env) strings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& s : strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string dash_c = "-c", script = command;
  char* argv[] = {sh.data(), dash_c.data(), script.data(), nullptr};

  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(pipe_fds[1], 1) < 0 || chdir(dir.c_str()) != 0) _exit(126);
    close(pipe_fds[0]);
    execve(sh.c_str(), argv, envp.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  ShellRun run;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) run.out.append(buffer, static_cast<size_t>(n));
  close(pipe_fds[0]);
  REQUIRE(waitpid(pid, &run.status, 0) == pid);
  return run;
}

// A sweep of one trial whose parameter `name` is `value` (a string),
// its entrypoint `command` as a job file's string entrypoint makes it.
JobSpec OneTrialSweep(const std::string& command, const std::string& value, const std::string& name = "lr") {
  JobSpec sweep;
  sweep.set_name("s");
  for (const std::string& arg : {std::string("/bin/sh"), std::string("-c"), command}) sweep.add_entrypoint(arg);
  sweep.mutable_tune()->set_metric("loss");
  sweep.mutable_tune()->set_num_samples(1);
  auto* dimension = sweep.mutable_tune()->add_search_space();
  dimension->set_name(name);
  dimension->set_distribution("grid");
  dimension->add_values_json(JsonQuote(value));
  return sweep;
}

std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
  return text;
}

struct Context {
  const char* name;
  const char* command;   // {lr} is the placeholder
  const char* expected;  // what it prints, @ standing for the value
};

// Every place a word of a POSIX shell command can stand, and some that
// hide quotes or parentheses from a naive reader.
const std::vector<Context> kContexts = {
    {"a plain word", "printf '<%s>' {lr}", "<@>"},
    {"a word with text around it", "printf '<%s>' --lr={lr}x", "<--lr=@x>"},
    {"double quotes", "printf '<%s>' \"{lr}\"", "<@>"},
    {"double quotes with text", "printf '<%s>' \"a {lr} b\"", "<a @ b>"},
    {"escaped quotes in double quotes", "printf '<%s>' \"\\\"{lr}\\\"\"", "<\"@\">"},
    {"single quotes", "printf '<%s>' '{lr}'", "<@>"},
    {"single quotes with text", "printf '<%s>' 'x {lr} y'", "<x @ y>"},
    {"after an escaped quote", "printf '<%s>' x\\' {lr}", "<x'><@>"},
    {"an assignment", "X={lr}; printf '<%s>' \"$X\"", "<@>"},
    {"an assignment before a command", "X={lr} sh -c 'printf \"<%s>\" \"$X\"'", "<@>"},
    {"a command substitution", "printf '<%s>' \"$(printf %s {lr})\"", "<@>"},
    {"double quotes in a command substitution in double quotes", "printf '<%s>' \"$(printf %s \"{lr}\")\"", "<@>"},
    {"backticks", "printf '<%s>' \"`printf %s {lr}`\"", "<@>"},
    {"backticks unquoted", "X=`printf %s {lr}`; printf '<%s>' \"$X\"", "<@>"},
    {"a here-document", "cat <<EOF\n<{lr}>\nEOF", "<@>\n"},
    {"a here-document with quotes in its text", "cat <<EOF\n'{lr}' \"{lr}\"\nEOF", "'@' \"@\"\n"},
    {"a tab-stripped here-document", "cat <<-END\n\t<{lr}>\n\tEND\nprintf '<%s>' {lr}", "<@>\n<@>"},
    {"a command substitution in a here-document", "cat <<EOF\n<$(printf %s \"{lr}\")>\nEOF", "<@>\n"},
    {"after a here-document", "cat <<EOF\n'\nEOF\nprintf '<%s>' {lr}", "'\n<@>"},
    {"two here-documents on one line", "cat <<A; cat <<'B'\n<{lr}>\nA\n'\"\nB\nprintf '<%s>' {lr}", "<@>\n'\"\n<@>"},
    {"after a comment", "printf '<%s>' a # {lr}\nprintf '<%s>' {lr}", "<a><@>"},
    {"after a comment with a quote", "# don't {lr}\nprintf '<%s>' \"{lr}\"", "<@>"},
    {"a # that starts no comment", "printf '<%s>' a#{lr} $#{lr}", "<a#@><0@>"},
    {"a case word", "case {lr} in *) printf '<%s>' {lr};; esac", "<@>"},
    {"a case pattern", "case \"$(printf %s {lr})\" in {lr}) printf yes;; *) printf no;; esac", "yes"},
    {"a case in a command substitution", "printf '<%s>' \"$(case x in x) printf %s {lr};; esac)\"", "<@>"},
    {"a parameter expansion's default", "printf '<%s>' ${unset_var:-{lr}} \"${unset_var:-{lr}}\"", "<@><@>"},
    {"a function's argument", "f() { printf '<%s>' \"$1\"; }; f {lr}", "<@>"},
    {"a function's body", "f() { printf '<%s>' {lr}; }; f", "<@>"},
    {"a subshell", "(printf '<%s>' {lr})", "<@>"},
    {"a pipeline", "printf '<%s>' {lr} | cat", "<@>"},
    {"a for loop", "for x in {lr}; do printf '<%s>' \"$x\"; done", "<@>"},
    {"single quotes in double quotes", "printf '<%s>' \"'{lr}'\"", "<'@'>"},
    {"double quotes in single quotes", "printf '<%s>' '\"{lr}\"'", "<\"@\">"},
    {"single quotes in backticks", "X=`printf %s '{lr}'`; printf '<%s>' \"$X\"", "<@>"},
    {"a here-document in a command substitution", "x=$(cat <<EOF\n<{lr}>\nEOF\n); printf '%s' \"$x\"", "<@>"},
    {"a comment in a command substitution", "printf '<%s>' \"$(printf %s {lr} # ) '\n)\"", "<@>"},
    {"after a line continuation", "printf '<%s>' \\\n{lr}", "<@>"},
};

}  // namespace

TEST_CASE("a sweep's values reach a string entrypoint's program as one word each and never run",
          "[sweep_shell]") {
  // /bin/sh is dash here and bash on other distributions: both, where bash is.
  std::vector<std::string> shells = {"/bin/sh"};
  if (access("/bin/bash", X_OK) == 0) shells.push_back("/bin/bash");
  char dir_template[] = "/tmp/sweep_shell_XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  const std::string marker = dir + "/PWNED";
  const std::string touch = "touch " + marker;
  const std::vector<std::string> values = {
      "$(" + touch + ")",
      "`" + touch + "`",
      "x; " + touch,
      "x\n" + touch,
      "x\nEOF\n" + touch + "\ncat <<EOF\ny",  // leaves a here-document early
      "x\nEND\n" + touch + "\ncat <<-END\ny",
      "'; " + touch + "; '",
      "\"; " + touch + "; \"",
      "'\"$(" + touch + ")\"'",
      "x) " + touch + ";; esac; case x in (x",
      "}\"; " + touch + "; \"${x:-",
      "\\",
      "a\\\\b\\",
      "\\`" + touch + "\\`",
      "*",
      "$HOME ${IFS} $1",
      "a  b\tc",
      "",
      " ",
      "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82",
      "-n",
      "--lr=0.1",
      "# not a comment",
      "0.0031",
  };
  for (const Context& context : kContexts) {
    for (const std::string& value : values) {
      INFO("context: " << context.name << "\nvalue: " << JsonQuote(value));
      const JobSpec sweep = OneTrialSweep(context.command, value);
      REQUIRE(ValidateTuneSpec(sweep).ok());
      auto trial = TrialSpec(sweep, "sweep-1", 0);
      REQUIRE(trial.ok());
      INFO("command: " << JsonQuote(trial->entrypoint(2)));
      // The value is not in the command at all, so no reading of it can run it.
      if (value.size() > 2) CHECK(trial->entrypoint(2).find(value) == std::string::npos);
      for (const std::string& shell : shells) {
        INFO("shell: " << shell);
        const ShellRun run = RunShell(trial->entrypoint(2), TrialEnvironment(*trial), dir, shell);
        CHECK(access(marker.c_str(), F_OK) != 0);
        CHECK(run.out == Replaced(context.expected, "@", value));
        CHECK(WIFEXITED(run.status));
        CHECK(WEXITSTATUS(run.status) == 0);
        unlink(marker.c_str());
      }
    }
  }
  rmdir(dir.c_str());
}

TEST_CASE("a placeholder with no safe meaning in a shell command is refused at submit, named", "[sweep_shell]") {
  struct Refused {
    const char* command;
    const char* says;
  };
  for (const Refused& r : std::vector<Refused>{
           {"cat <<'EOF'\n{lr}\nEOF", "quoted here-document"},
           {"cat <<\"EOF\"\nx {lr}\nEOF", "quoted here-document"},
           {"cat <<\\EOF\n{lr}\nEOF", "quoted here-document"},
           {"x=$(cat <<'EOF'\n{lr}\nEOF\n)", "quoted here-document"},
           {"cat <<{lr}\nx\n{lr}", "here-document's delimiter"},
       }) {
    INFO(r.command);
    const Status status = ValidateTuneSpec(OneTrialSweep(r.command, "0.1"));
    REQUIRE_FALSE(status.ok());
    CHECK(status.message().find("'{lr}'") != std::string::npos);
    CHECK(status.message().find(r.says) != std::string::npos);
    CHECK(status.message().find("entrypoint[2]") != std::string::npos);
  }
  // A job file's string entrypoint: the error points at it.
  auto parsed = ParseJobSpec(
      "entrypoint: |\n  cat <<'EOF'\n  {lr}\n  EOF\ntune:\n  metric: a\n  search_space: {lr: {choice: [1]}}\n",
      "sweep.yaml");
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().message().find("sweep.yaml:1") != std::string::npos);
  CHECK(parsed.status().message().find("quoted here-document") != std::string::npos);
  // An unquoted here-document, and a quoted one after it is closed, are fine.
  CHECK(ValidateTuneSpec(OneTrialSweep("cat <<EOF\n{lr}\nEOF", "0.1")).ok());
  CHECK(ValidateTuneSpec(OneTrialSweep("cat <<'EOF'\nx\nEOF\necho {lr}", "0.1")).ok());
}

TEST_CASE("in arithmetic a value must be a number, else the trial is not made", "[sweep_shell]") {
  const std::string command = "printf '<%s>' $(( {lr} + 1 )) \"$(( {lr} * 2 ))\"";
  auto trial = TrialSpec(OneTrialSweep(command, "20"), "sweep-1", 0);
  REQUIRE(trial.ok());
  CHECK(RunShell(trial->entrypoint(2), TrialEnvironment(*trial), "/").out == "<21><40>");
  // bash evaluates a[$(...)] in arithmetic: such a value would run there.
  for (const std::string value : {"a[$(touch /tmp/x)]", "1+1", "x", "", "1 "}) {
    INFO(value);
    auto refused = TrialSpec(OneTrialSweep(command, value), "sweep-1", 0);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("'{lr}'") != std::string::npos);
    CHECK(refused.status().message().find("$((") != std::string::npos);
  }
  for (const std::string value : {"-3", "0.5", "1e3"}) CHECK(TrialSpec(OneTrialSweep(command, value), "s", 0).ok());
}

TEST_CASE("each parameter is in a trial's environment as CLUSTER_PARAM_<name>", "[sweep_shell]") {
  auto trial = TrialSpec(OneTrialSweep("train --opt {opt_2}", "a b", "opt_2"), "sweep-1", 0);
  REQUIRE(trial.ok());
  CHECK(trial->entrypoint(2) == "train --opt \"${CLUSTER_PARAM_opt_2}\"");
  const auto env = TrialEnvironment(*trial);
  CHECK(env == std::map<std::string, std::string>{{"CLUSTER_PARAM_opt_2", "a b"}});
  // Numbers as written; names no placeholder can take (Python's model/lr) get no variable.
  JobSpec job;
  (*job.mutable_trial_params())["lr"] = "0.01";
  (*job.mutable_trial_params())["model/lr"] = "0.02";
  CHECK(TrialEnvironment(job) == std::map<std::string, std::string>{{"CLUSTER_PARAM_lr", "0.01"}});
  CHECK(TrialEnvironment(JobSpec()).empty());
  // A list entrypoint runs no shell: its values are its arguments, as written.
  JobSpec sweep = OneTrialSweep("", "a b; c");
  sweep.clear_entrypoint();
  for (const char* arg : {"train", "--opt={lr}"}) sweep.add_entrypoint(arg);
  trial = TrialSpec(sweep, "sweep-1", 0);
  REQUIRE(trial.ok());
  CHECK(trial->entrypoint(1) == "--opt=a b; c");
}
