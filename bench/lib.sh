# bench/lib.sh — what the bench scripts share (sourced by bench/run.sh,
# bench/console.sh and bench/neutral.sh after test/bin/lib.sh): medians,
# ratios, the cluster's CPU time, statements and the fields of a result line.

# the median of the numbers on standard input, one per line
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# a ÷ b to two places; "-" unless both are numbers (a system left out is "–")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { n = "^[0-9.eE+-]+$"; if (a ~ n && b ~ n && b > 0) printf "%.2f", a / b; else print "-" }'; }

# The CPU time (clock ticks) the cluster's processes used so far: the
# postmaster's exited children (backends, autovacuum workers) and the live
# ones (walwriter, checkpointer, taskq's worker, ...).  Read before and
# after a run (after its backends exited), it gives the run's CPU in the
# database, whatever else runs on the machine.
cluster_ticks() {
    local pm c t=0
    pm=$(head -1 "$TQ_PGDATA/postmaster.pid")
    t=$(awk '{print $16 + $17}' "/proc/$pm/stat")
    for c in $(cat "/proc/$pm/task/$pm/children" 2>/dev/null); do
        t=$((t + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
    done
    echo "$t"
}
TICK_US=$((1000000 / $(getconf CLK_TCK)))

# sql STATEMENT...: each statement through psql (PGDATABASE), the rows
# unaligned; an error stops it
sql() { local a=() c; for c in "$@"; do a+=(-c "$c"); done; psql -X -q -At -v ON_ERROR_STOP=1 "${a[@]}"; }

# field NAME: the value of NAME=value in the line on standard input
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p"; }
