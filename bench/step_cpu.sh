#!/usr/bin/env bash
# bench/step_cpu.sh — one backend's CPU for a number of steps, on a running
# server that preloads taskq and has the extension in database DB:
#
#   bench/step_cpu.sh plain PORT N   N steps of own_tasks, then return_task
#                                    and insert_tasks of one successor in a
#                                    transaction (a plain task with a successor)
#   bench/step_cpu.sh saga PORT N    N runs of a linear saga of 10 steps, each
#                                    step own_tasks then return_step (starts
#                                    not counted)
#
# Prints the backend's user + system CPU in ms (from /proc/PID/stat, so the
# client must run on the server's machine).  Other load on the machine moves
# this figure far less than it moves a rate, which is why a before/after of
# two builds on a shared machine uses it: two servers, one per build, the
# builds taking turns.  PGHOST, PGUSER and DB (postgres) as for psql.
set -euo pipefail

kind=${1:?plain or saga}
port=${2:?port}
n=${3:?count}
db=${DB:-postgres}
r=$RANDOM$RANDOM
script=$(mktemp)
stat=$(mktemp -d)
chmod a+rwx "$stat"
trap 'rm -rf "$script" "$stat"' EXIT

{
    echo '\set QUIET on'
    echo 'SELECT pg_backend_pid() AS pid \gset'
    echo '\setenv TQPID :pid'
    echo '\o /dev/null'
    case $kind in
    plain)
        echo "SELECT taskq.enqueue('w$r', '{}', '$r-0');"
        ;;
    saga)
        steps='{"name": "s1", "do": "w'$r'"}'
        for k in 2 3 4 5 6 7 8 9 10; do
            steps+=', {"name": "s'$k'", "do": "w'$r'", "after": ["s'$((k - 1))'"]}'
        done
        echo "SELECT taskq.define_saga('lin$r', '{\"steps\": [$steps]}');"
        echo "SELECT taskq.start_saga('lin$r', 'r$r-' || g) FROM pg_catalog.generate_series(1, $n) AS g;"
        n=$((n * 10))
        ;;
    *)
        echo "unknown workload $kind (plain or saga)" >&2
        exit 2
        ;;
    esac
    echo "\\! cat /proc/\$TQPID/stat > $stat/before"
    for i in $(seq 1 "$n"); do
        echo "SELECT id, token FROM taskq.own_tasks('a', 1, ARRAY['w$r']) \\gset"
        if [[ $kind == plain ]]; then
            echo "BEGIN; SELECT taskq.return_task(:'id', :'token', 'done', 'completed');"
            echo "SELECT taskq.insert_tasks('[{\"id\": \"$r-$i\", \"action\": \"w$r\"}]'); COMMIT;"
        else
            echo "SELECT taskq.return_step(:'id', :'token', 'success');"
        fi
    done
    echo "\\! cat /proc/\$TQPID/stat > $stat/after"
} >"$script"
chmod a+r "$script"

psql -X -p "$port" -d "$db" -v ON_ERROR_STOP=1 -q -f "$script" >/dev/null
read -ra b <"$stat/before"
read -ra a <"$stat/after"
ticks=$(getconf CLK_TCK)
# fields 14 and 15 of /proc/PID/stat: utime and stime, in clock ticks
echo $(((a[13] + a[14] - b[13] - b[14]) * 1000 / ticks))
