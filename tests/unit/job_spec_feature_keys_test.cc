// Job-file keys of the features built on jobs: shipping the working folder,
// outputs and checkpoint storage, the restart delay. Each with its defaults
// and its errors, as job_spec_test.cc does for the core keys.
#include <catch2/catch.hpp>

#include "job_spec_test_util.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("shipping keys: mode, excludes and the package cap", "[job_spec][shipping]") {
  JobSpec spec = Parsed("entrypoint: x\nworking_dir_mode: Shared\nexcludes: ['data/', '*.ckpt']\nmax_package_size: 4Gi\n");
  CHECK(spec.working_dir_mode() == SHARED);
  REQUIRE(spec.excludes_size() == 2);
  CHECK(spec.excludes(1) == "*.ckpt");
  CHECK(spec.max_package_bytes() == (int64_t{4} << 30));
  CHECK(Parsed("entrypoint: x\n").working_dir_mode() == SHIP);
  CHECK(ErrorOf("entrypoint: x\nworking_dir_mode: shard\n") ==
        "job.yaml:2:19: key 'working_dir_mode': expected ship or shared, got 'shard' (did you mean 'shared'?)");
  CHECK(ErrorOf("entrypoint: x\nworking_dir_mode: nfs\n") ==
        "job.yaml:2:19: key 'working_dir_mode': expected ship or shared, got 'nfs'");
  CHECK(ErrorOf("entrypoint: x\nexcludes: ['']\n") ==
        "job.yaml:2:12: key 'excludes[0]': is an empty pattern; write e.g. 'data/' or '*.ckpt'");
  CHECK(ErrorOf("entrypoint: x\nexcludes: data\n").find("key 'excludes'") != std::string::npos);
  CHECK(ErrorOf("entrypoint: x\nmax_package_size: 0\n") ==
        "job.yaml:2:19: key 'max_package_size': expected a size above 0, like 4Gi, got 0");
  CHECK(ErrorOf("entrypoint: x\nmax_package_size: lots\n").rfind("job.yaml:2:19: key 'max_package_size'", 0) == 0);
}

TEST_CASE("the head refuses a package id that is not a SHA-256 or that a shared job carries", "[job_spec][shipping]") {
  JobSpec spec = Parsed("entrypoint: x\n");
  spec.set_package_id("../../x");
  CHECK(ValidateJobSpec(spec).message() == "key 'package_id': expected a SHA-256 in lower-case hex");
  spec.set_package_id(std::string(64, 'a'));
  CHECK(ValidateJobSpec(spec).ok());
  spec.set_working_dir_mode(SHARED);
  CHECK(ValidateJobSpec(spec).message() == "key 'package_id': a job with working_dir_mode: shared ships no package");
}

TEST_CASE("outputs and checkpoint storage", "[job_spec][results]") {
  JobSpec spec = Parsed("entrypoint: x\nworking_dir: .\noutputs: [model.pt, results/]\n"
                        "checkpoint: {storage: shared, dir: /nfs/ckpt}\n");
  REQUIRE(spec.outputs_size() == 2);
  CHECK(spec.outputs(1) == "results/");
  CHECK(spec.checkpoint().storage() == "shared");
  CHECK(ErrorOf("entrypoint: x\noutputs: [/etc/passwd]\n") ==
        "job.yaml:2:11: key 'outputs[0]': '/etc/passwd' is absolute; an output is a path under the working folder");
  CHECK(ErrorOf("entrypoint: x\noutputs: [a/../../b]\n") ==
        "job.yaml:2:11: key 'outputs[0]': 'a/../../b' leaves the working folder");
  CHECK(ErrorOf("entrypoint: x\noutputs: [model.pt]\n") ==
        "job.yaml: key 'outputs': outputs are paths under the job's working_dir, and it has none; give a working_dir");
  // clusterctl writes these on the submitter's machine, under --out or the
  // working folder: never elsewhere.
  CHECK(ErrorOf("entrypoint: x\ndvclive: ../../escaped\n") ==
        "job.yaml:2:10: key 'dvclive': '../../escaped' leaves the working folder");
  CHECK(ErrorOf("entrypoint: x\ndvclive: /tmp/live\n") ==
        "job.yaml:2:10: key 'dvclive': '/tmp/live' is absolute; the DVCLive folder is a path under the working "
        "folder");
  CHECK(Parsed("entrypoint: x\ndvclive: runs/live\n").dvclive_dir() == "runs/live");
  CHECK(ErrorOf("entrypoint: x {lr}\ntune: {metric: loss, search_space: {lr: {choice: [1]}}, best_params: /etc/x}\n") ==
        "job.yaml:2:70: key 'tune.best_params': '/etc/x' is absolute; best_params is a path under the working folder");
  JobSpec sent = Parsed("entrypoint: x\n");
  sent.set_dvclive_dir("/tmp/live");  // a spec that skipped the file's checks
  CHECK(ValidateJobSpec(sent).message() ==
        "key 'dvclive': '/tmp/live' is absolute; the DVCLive folder is a path under the working folder");
  // A relative checkpoint folder stays in the attempt's working folder.
  CHECK(ErrorOf("entrypoint: x\ncheckpoint: {dir: ../ck}\n") ==
        "job.yaml:2:19: key 'checkpoint.dir': '../ck' leaves the working folder");
  CHECK(Parsed("entrypoint: x\ncheckpoint: {dir: runs/ck}\n").checkpoint().dir() == "runs/ck");
  CHECK(Parsed("entrypoint: x\ncheckpoint: {dir: /scratch/ck}\n").checkpoint().dir() == "/scratch/ck");
  JobSpec escaping = Parsed("entrypoint: x\n");
  escaping.mutable_checkpoint()->set_dir("a/../../ck");  // a spec that skipped the file's checks
  CHECK(ValidateJobSpec(escaping).message() == "key 'checkpoint.dir': 'a/../../ck' leaves the working folder");
  CHECK(ErrorOf("entrypoint: x\ncheckpoint: {storage: s3}\n") ==
        "job.yaml:2:23: key 'checkpoint.storage': expected store (the cluster's store, the default), shared or "
        "s3://BUCKET/PREFIX, got 's3'");
  // The job's own S3 locations, checked as --store s3:// is.
  JobSpec own = Parsed("entrypoint: x\nworking_dir: .\ncheckpoint: {storage: s3://ckpts/exp1}\noutputs: [m.pt]\n"
                       "outputs_storage: s3://models/exp1/\n");
  CHECK(own.checkpoint().storage() == "s3://ckpts/exp1");
  CHECK(own.outputs_storage() == "s3://models/exp1/");
  CHECK(ErrorOf("entrypoint: x\ncheckpoint: {storage: s3://A_B}\n") ==
        "job.yaml:2:23: key 'checkpoint.storage': 's3://A_B': bucket name 'A_B' is not valid (3 to 63 of a-z, 0-9, "
        "'.', '-')");
  CHECK(ErrorOf("entrypoint: x\noutputs_storage: /nfs/models\n") ==
        "job.yaml:2:18: key 'outputs_storage': '/nfs/models' is not an S3 location (s3://BUCKET/PREFIX)");
  CHECK(ErrorOf("entrypoint: x\ncheckpoint: {storage: shared}\n") ==
        "job.yaml: key 'checkpoint.dir': with storage: shared, give the absolute path of a folder every machine shares");
}

TEST_CASE("restart_delay takes initial, max and factor, each defaulted, and is checked with its line", "[job_spec][backoff]") {
  CHECK_FALSE(Parsed("entrypoint: x\n").has_restart_delay());  // the head uses 1s doubling to 5m
  CHECK(EffectiveRestartDelay(JobSpec()).initial_s() == 1);
  CHECK(EffectiveRestartDelay(JobSpec()).max_s() == 300);
  CHECK(EffectiveRestartDelay(JobSpec()).factor() == 2);

  JobSpec full = Parsed("entrypoint: x\nrestart_delay: {initial: 500ms, max: 10m, factor: 1.5}\n");
  CHECK(full.restart_delay().initial_s() == 0.5);
  CHECK(full.restart_delay().max_s() == 600);
  CHECK(full.restart_delay().factor() == 1.5);
  JobSpec none = Parsed("entrypoint: x\nrestart_delay:\n  initial: 0\n");
  CHECK(none.restart_delay().initial_s() == 0);
  CHECK(none.restart_delay().max_s() == 300);
  CHECK(none.restart_delay().factor() == 2);
  JobSpec slow = Parsed("entrypoint: x\nrestart_delay: {initial: 10m}\n");  // max follows initial up
  CHECK(slow.restart_delay().max_s() == 600);
  CHECK(Parsed("entrypoint: x\nrestart_delay: {initial: 30}\n", {"restart_delay.factor=3"}).restart_delay().factor() == 3);

  CHECK(ErrorOf("entrypoint: x\nrestart_delay: 5s\n") ==
        "job.yaml:2:16: key 'restart_delay': expected a map like {initial: 1s, max: 5m, factor: 2}, got '5s'");
  CHECK(ErrorOf("entrypoint: x\nrestart_delay:\n  initial: 1s\n  maxx: 2m\n") ==
        "job.yaml:4:3: unknown key 'restart_delay.maxx' (did you mean 'restart_delay.max'?)");
  CHECK(ErrorOf("entrypoint: x\nrestart_delay:\n  initial: soon\n") ==
        "job.yaml:3:12: key 'restart_delay.initial': expected seconds as a number or a string like '90s', '10m', "
        "'2h', '1h30m', got 'soon'");
  CHECK(ErrorOf("entrypoint: x\nrestart_delay:\n  factor: 0.5\n") ==
        "job.yaml:3:3: key 'restart_delay': factor must be a number between 1 and 100, got 0.5");
  CHECK(ErrorOf("entrypoint: x\nrestart_delay:\n  initial: 1m\n  max: 10s\n") ==
        "job.yaml:3:3: key 'restart_delay': max (10s) is less than initial (60s)");
  CHECK(ErrorOf("entrypoint: x\nrestart_delay: {max: 30d}\n") ==
        "job.yaml:2:16: key 'restart_delay': max must be a duration between 0 and 7 days, got 2592000s");

  // The head checks a spec from the wire the same way.
  JobSpec wire = Parsed("entrypoint: x\n");
  wire.mutable_restart_delay()->set_initial_s(-1);
  wire.mutable_restart_delay()->set_max_s(1);
  wire.mutable_restart_delay()->set_factor(2);
  CHECK(ValidateJobSpec(wire).message() ==
        "key 'restart_delay': initial must be a duration between 0 and 7 days, got -1s");
  wire.mutable_restart_delay()->set_initial_s(1);
  wire.mutable_restart_delay()->set_factor(NAN);
  CHECK(ValidateJobSpec(wire).message() == "key 'restart_delay': factor must be a number between 1 and 100, got nan");
  CHECK(Parsed("entrypoint: x\n").has_restart_delay() == false);
}

TEST_CASE("checkpoint.upload_rate takes a size a second or unlimited", "[job_spec][results]") {
  CHECK(EffectiveCheckpointUploadRate(Parsed("entrypoint: x\n")) == kDefaultCheckpointUploadRate);
  CHECK(EffectiveCheckpointUploadRate(Parsed("entrypoint: x\ncheckpoint: {upload_rate: 250MiB/s}\n")) ==
        250 * 1048576);
  CHECK(EffectiveCheckpointUploadRate(Parsed("entrypoint: x\ncheckpoint: {upload_rate: 1GB}\n")) == 1000000000);
  CHECK(EffectiveCheckpointUploadRate(Parsed("entrypoint: x\ncheckpoint: {upload_rate: unlimited}\n")) == 0);
  CHECK(EffectiveCheckpointUploadRate(Parsed("entrypoint: x\ncheckpoint: {upload_rate: 0}\n")) == 0);
  CHECK(ErrorOf("entrypoint: x\ncheckpoint: {upload_rate: 10KiB/s}\n") ==
        "job.yaml:2:27: key 'checkpoint.upload_rate': expected 0 or unlimited (no limit), or a rate from 1MiB/s "
        "to 1TiB/s, got 10240 bytes/s");
  CHECK(EffectiveCheckpointUploadRate(Parsed("entrypoint: x\ncheckpoint: {upload_rate: 100MiB/S}\n")) == 100 << 20);
  CHECK(EffectiveCheckpointUploadRate(Parsed("entrypoint: x\ncheckpoint: {upload_rate: Unlimited}\n")) == 0);
  CHECK(ErrorOf("entrypoint: x\ncheckpoint: {upload_rate: fast}\n") ==
        "job.yaml:2:27: key 'checkpoint.upload_rate': expected a rate like 100MiB/s, 1GB/s or unlimited, got 'fast'");
  CHECK(ErrorOf("entrypoint: x\ncheckpoint: {upload_rate: 5MiB/s/s}\n") ==
        "job.yaml:2:27: key 'checkpoint.upload_rate': expected a rate like 100MiB/s, 1GB/s or unlimited, got "
        "'5MiB/s/s'");
  CHECK(ErrorOf("entrypoint: x\ncheckpoint: {storage: shared, dir: /nfs/c, upload_rate: 1GB}\n") ==
        "job.yaml: key 'checkpoint.upload_rate': with storage: shared nothing is uploaded; leave upload_rate out");
  CHECK(ErrorOf("entrypoint: x\ncheckpoint: {upload_rate: [1]}\n") ==
        "job.yaml:2:27: key 'checkpoint.upload_rate': expected a rate like 100MiB/s, or unlimited, got a list");
  JobSpec wire = Parsed("entrypoint: x\n");
  wire.mutable_checkpoint()->set_upload_bytes_per_s(-1);
  CHECK(ValidateJobSpec(wire).message() ==
        "key 'checkpoint.upload_rate': expected 0 or unlimited (no limit), or a rate from 1MiB/s to 1TiB/s, got -1 "
        "bytes/s");
}

TEST_CASE("preemption keys: preemptible, preemption_grace_s and max_preemptions", "[job_spec][preemption]") {
  JobSpec spec = Parsed("entrypoint: x\n");
  CHECK_FALSE(spec.not_preemptible());
  CHECK(spec.preemption_grace_s() == 0);  // the head's preemption_grace_default_s
  CHECK_FALSE(spec.has_max_preemptions());
  spec = Parsed("entrypoint: x\npreemptible: false\npreemption_grace_s: 2m\nmax_preemptions: 0\n");
  CHECK(spec.not_preemptible());
  CHECK(spec.preemption_grace_s() == 120);
  REQUIRE(spec.has_max_preemptions());
  CHECK(spec.max_preemptions() == 0);
  CHECK_FALSE(Parsed("entrypoint: x\npreemptible: true\n").not_preemptible());
  CHECK(ErrorOf("entrypoint: x\npreemptible: no\n").rfind("job.yaml:2:14: key 'preemptible': expected true or false", 0) == 0);
  CHECK(ErrorOf("entrypoint: x\npreemption_grace_s: -1\n").rfind("job.yaml:2:21: key 'preemption_grace_s'", 0) == 0);
  CHECK(ErrorOf("entrypoint: x\npreemption_grace_s: 2d\n") ==
        "job.yaml:2:21: key 'preemption_grace_s': expected a duration from 0 to 86400 seconds, got 172800");
  CHECK(ErrorOf("entrypoint: x\nmax_preemptions: -2\n") ==
        "job.yaml:2:18: key 'max_preemptions': expected an integer from 0 to 1000000, got -2");
  spec = Parsed("entrypoint: x\n");
  spec.set_preemption_grace_s(-5);
  CHECK(ValidateJobSpec(spec).message().rfind("key 'preemption_grace_s'", 0) == 0);
}
