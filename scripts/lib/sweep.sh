# shellcheck shell=bash
# Shared by the scripts that sweep every size over several team sizes
# (bench/tune/crossover.sh, bench/tune/mpi_crossover.sh, bench/osu/latency.sh):
# the team sizes, the machine record and the namespace cluster. Source it after
# scripts/lib/cli.sh, with REPO set.

# sweep_ranks "2,4,8": sets the array rank_list (every entry >= 2) and
# max_ranks (the largest); a usage error otherwise.
sweep_ranks() {
  local n
  IFS=, read -r -a rank_list <<<"$1"
  max_ranks=0
  for n in "${rank_list[@]}"; do
    [[ $n =~ ^[0-9]+$ ]] && ((n >= 2)) || usage_die "bad rank count '$n'"
    ((n > max_ranks)) && max_ranks=$n
  done
}

# sweep_machine FILE WHERE COMMAND...: what a result depends on (date, CPU,
# commit, Open MPI, where it ran, the load average at the start, the command);
# sweep_machine_end FILE adds the load average at the end.
sweep_machine() {
  local file=$1 where=$2
  shift 2
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
    echo "mccl: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "open mpi: $(mpirun.openmpi --version 2>/dev/null | head -1 || echo none)"
    echo "where: $where"
    echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "command: $*"
  } >"$file"
}
sweep_machine_end() { echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$1"; }

# sweep_cluster PREFIX RATE: (root) a namespace cluster of max_ranks hosts
# (tests/fabric/cluster.sh; links limited to RATE, RPS on) named PREFIX<pid>
# in cluster_name, torn down when the script exits; 77 without root.
sweep_cluster() {
  ((EUID == 0)) || skip "the namespace cluster needs root"
  cluster_name=$1$$
  trap '"$REPO/tests/fabric/cluster.sh" down --name "$cluster_name" >/dev/null 2>&1 || true' EXIT
  "$REPO/tests/fabric/cluster.sh" up --name "$cluster_name" --hosts "$max_ranks" --rate "$2" --rps >&2
}
