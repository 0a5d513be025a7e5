// Every tunable of clusterd, with its default and why. Included by
// config.h with CLUSTERD_CONFIG defined; printed by `clusterd start --help`.
// CLUSTERD_CONFIG(type, name, default, description)
CLUSTERD_CONFIG(int, heartbeat_ms, 500, "how often a node agent sends a heartbeat to the head")
CLUSTERD_CONFIG(int, node_timeout_ms, 2000, "silence after which the head declares a node DEAD")
CLUSTERD_CONFIG(int, reconnect_initial_ms, 100, "first delay before an agent retries a lost head")
CLUSTERD_CONFIG(int, reconnect_max_ms, 2000, "cap of the agent's exponential reconnect backoff")
CLUSTERD_CONFIG(int, stop_grace_ms, 5000, "SIGTERM to SIGKILL for a job's ranks and for `clusterd stop`")
CLUSTERD_CONFIG(int, rpc_timeout_ms, 5000, "deadline of each clusterctl call")
CLUSTERD_CONFIG(int, max_num_workers, 4096, "largest gang a job may ask for")
CLUSTERD_CONFIG(int, log_tail_lines, 20, "lines of a failed rank's log quoted in the job's reason")
CLUSTERD_CONFIG(int64_t, store_capacity_mb, 20480, "head: size cap of its blob store (code packages), MiB; unused blobs go first")
CLUSTERD_CONFIG(int64_t, package_cache_mb, 10240, "node agent: size cap of its cache of code packages, MiB")
CLUSTERD_CONFIG(int, journal_retry_ms, 1000, "head: while its journal cannot be written, how often it tries again by writing a fresh snapshot")
