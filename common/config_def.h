// Every tunable of clusterd, with its default and why: the one place a
// default is written. Whoever includes this file defines both macros.
//
// CLUSTERD_CONFIG(type, name, default, description): the daemon's; each is a
//   flag of `clusterd start` (heartbeat_ms is --heartbeat-ms).
// CLUSTERCTL_CONFIG(type, name, default, description): clusterctl's; each is
//   read from $CLUSTER_<NAME> (CLUSTER_RPC_TIMEOUT_MS), a flag may override it.
//
// docs/CONFIG.md lists every key with its default and description; a unit
// test (tests/unit/config_test.cc) fails when the two differ.
CLUSTERD_CONFIG(int, port, 6379, "head: port of its gRPC API, and (UDP) of the node agents' heartbeats")
CLUSTERD_CONFIG(int, dashboard_port, 8265, "head: port of the dashboard and its HTTP API")
CLUSTERD_CONFIG(int, agent_port, -1, "head: TCP port of the node agents' streams (-1: the one after --port, else any free one; 0: any free one; agents ask the head at --port which). Open it, with --port (TCP and UDP), between the machines")
CLUSTERD_CONFIG(int, heartbeat_ms, 500, "how often a node agent sends a heartbeat to the head")
CLUSTERD_CONFIG(int, node_timeout_ms, 2000, "silence after which the head declares a node DEAD")
CLUSTERD_CONFIG(int, register_timeout_ms, 10000, "`clusterd start`: how long it waits for this machine's node agent to register with the head (a worker joining, or the head's own node) before it fails, saying so")
CLUSTERD_CONFIG(int, reconnect_initial_ms, 100, "first delay before an agent retries a lost head")
CLUSTERD_CONFIG(int, reconnect_max_ms, 2000, "cap of the agent's exponential reconnect backoff")
CLUSTERD_CONFIG(int, keepalive_ms, 2000, "node agent: after this long without a word from the head, a heartbeat asks it to answer (by datagram, or on the stream), so a head that stops answering is noticed before TCP would notice")
CLUSTERD_CONFIG(int, keepalive_timeout_ms, 2000, "node agent: how long such an ask may go unanswered before the stream is dropped and the agent reconnects, where the head's machine no longer acknowledges what it sends (a stopped head keeps the stream)")
CLUSTERD_CONFIG(int, stop_grace_ms, 5000, "SIGTERM to SIGKILL for a job's ranks and for `clusterd stop`")
CLUSTERD_CONFIG(int, trial_finish_grace_ms, 10000, "head: how long a sweep's trial that reached max_t or a stop criterion may take to exit by itself (its last report is often its last epoch: it then writes its outputs and SUCCEEDS) before it is stopped")
CLUSTERD_CONFIG(int, unproven_connections_per_source, 64, "head: connections from one address that have not yet proven the token, on each of its ports (gRPC, agents'); past it the oldest of them is closed")
CLUSTERD_CONFIG(int, unproven_connections_per_port, 1024, "head: connections from anywhere that have not yet proven the token, on each of its ports; past it the oldest of them is closed")
CLUSTERD_CONFIG(int, max_num_workers, 4096, "largest gang a job may ask for")
CLUSTERD_CONFIG(int, log_tail_lines, 20, "lines of a failed rank's log quoted in the job's reason")
CLUSTERD_CONFIG(int64_t, store_capacity_mb, 20480, "head: size cap of its blob store (code packages), MiB; unused blobs go first")
CLUSTERD_CONFIG(int64_t, final_checkpoint_wait_ms, 600000, "node agent: how long rank 0's clean exit is held while the last checkpoint it reported is still being stored, so that a job SUCCEEDS with its last checkpoint stored; past it the exit is reported, the job ends with the one stored before and its record says why (the upload goes on)")
CLUSTERD_CONFIG(int64_t, package_cache_mb, 10240, "node agent: size cap of its cache of code packages, MiB")
CLUSTERD_CONFIG(int, journal_retry_ms, 1000, "head: while its journal cannot be written, how often it tries again by writing a fresh snapshot")
CLUSTERD_CONFIG(int64_t, max_finished_jobs, 100000, "head: finished jobs kept, those that ended last (a sweep's trials and an array that still runs are not taken); older ones are deleted with their logs and stored data, as by clusterctl delete, once min_finished_job_age_s has passed. 0 keeps every job")
CLUSTERD_CONFIG(int64_t, min_finished_job_age_s, 300, "head: how long a finished job is kept at least, whatever max_finished_jobs says, so that whoever follows it sees how it ended (Slurm's MinJobAge)")
CLUSTERD_CONFIG(int, max_attempts_kept, 20, "head: attempts of a job kept in full (the newest); older ones are summed up: their count and first and last failures")
CLUSTERD_CONFIG(int64_t, journal_compact_mb, 8, "head: the journal is rewritten as a snapshot of the live state once it is this large (MiB) and also journal_compact_ratio times its last snapshot")
CLUSTERD_CONFIG(int, journal_compact_ratio, 4, "head: growth of the journal over its last snapshot that makes it compact again (so rewriting costs at most 1/(ratio-1) of what was appended)")
CLUSTERD_CONFIG(int64_t, log_rank_limit_mb, 64, "head: each rank's output kept per attempt, MiB, unless its job file's log_limit says otherwise: the first part and the last log_tail_kb, with a line saying how much was dropped between (the rest never leaves its node). A training loop that prints every step fills a few MiB a day; 64 keeps a week of that and keeps a runaway print loop from costing more than 64 MiB a rank. 0: no limit")
CLUSTERD_CONFIG(int64_t, log_limit_max_mb, 1024, "head: the largest log_limit a job file may ask for, MiB; a job asking for more is refused with this key named")
CLUSTERD_CONFIG(int64_t, log_tail_kb, 1024, "head: of each rank's kept output past its log limit, the last this many KiB (at most half the limit): where a crash's traceback and the last epochs are. A node holds this much in memory for each rank past its limit")
CLUSTERD_CONFIG(int64_t, log_job_limit_mb, 4096, "head: all of a job's logs together (every rank and attempt), MiB: each attempt's ranks share what is left of it, and output past it is dropped with a line saying so. 0: no limit")
CLUSTERD_CONFIG(int64_t, log_store_limit_mb, 51200, "head: all jobs' logs in its state folder (jobs/), MiB: past it the logs of the jobs that finished first are removed (never a running job's) and their records say so; when only running jobs' logs are left, new output is dropped with a line saying so, so that the journal's disk never fills. 0: no limit")
CLUSTERD_CONFIG(int64_t, log_store_min_free_mb, 1024, "head: free space its log store leaves on the disk of its state folder, MiB, whatever log_store_limit_mb allows: below twice this the logs of the jobs that finished first are removed, and new output that would take it below this is dropped with a line saying so, so that the journal beside it can still be written and compacted on a disk that other things fill too. 0: no floor")
CLUSTERD_CONFIG(std::string, containment, "auto", "node agent: how each attempt's processes are held so that whatever its ranks start (setsid, double forks, a cleared environment) ends with the attempt: auto (a cgroup per attempt where the node can make one, cgroup v2 or v1's freezer, else a keeper process per attempt that is the child subreaper of its ranks) or subreaper (the keeper alone)")
CLUSTERD_CONFIG(std::string, run_as, "", "node agent: the user a job's ranks run as when its job file names none (\"\": the daemon's own user). A shared cluster sets it (nobody, or a user of its own) so that jobs do not run with the daemon's privileges; switching needs a daemon running as root")
CLUSTERD_CONFIG(std::string, allowed_run_as, "*", "node agent: the users a job file's run_as may name: * for any user of this node but root (uid 0), else a comma-separated list of user names (root only when listed)")
CLUSTERD_CONFIG(int64_t, max_submitted_jobs, 100000, "head: jobs not yet finished (waiting or running) the cluster holds at most; a submit that would pass it is refused whole, naming this key. Each costs the head memory and a journal record. 0: no limit")
CLUSTERD_CONFIG(int64_t, max_submitted_jobs_per_user, 20000, "head: jobs not yet finished (waiting or running) one submitter may hold (Slurm's MaxSubmitJobsPerUser); a submit that would pass it is refused whole, naming this key. One token today: everyone who holds it counts as one submitter. 0: no limit")
CLUSTERD_CONFIG(int, report_rate_per_s, 100, "node agent: reports a second each rank may make (report(), ctrain::report); past it a report is held back until its turn, so a tight report loop is slowed and loses nothing, its last value included. A report that would wait more than 2 s (several at once from one rank) is refused, saying so. 0: no limit")
CLUSTERD_CONFIG(int, report_burst, 200, "node agent: reports a rank may make at once after a pause before report_rate_per_s holds it back")
CLUSTERD_CONFIG(int, report_slots_per_rank, 4, "node agent: a rank's reports under way at once (connections to the report socket); more are refused, saying so. Each rank has its own, so one rank holding many connections never stops another's report")
CLUSTERD_CONFIG(int64_t, job_metrics_max_records, 10000, "head: a job's metric reports kept (every attempt and rank together); past it the older ones are thinned, every 2nd dropped at a time, keeping each rank's latest report of the newest attempt. Each record keeps its report's number (index), so the gaps show what went, and the head's log says how many of how many are kept")
CLUSTERD_CONFIG(int64_t, job_metrics_max_mb, 4, "head: a job's metric reports kept, MiB (their stored size; the head's memory holds a few times that), thinned as for job_metrics_max_records; the journal holds at most journal_compact_ratio times what is kept")
CLUSTERCTL_CONFIG(int, rpc_timeout_ms, 5000, "clusterctl: deadline of each call to the head (--timeout-ms overrides it)")
CLUSTERCTL_CONFIG(int64_t, follow_outage_ms, 60000, "clusterctl: how long a following command (submit --follow, logs -f, a sweep's or an array's follow) keeps trying a head it cannot reach, as during a head restart, before it gives up. 0: not at all")
