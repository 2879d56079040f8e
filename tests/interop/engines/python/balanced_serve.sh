# Sourced by the run scripts of the suites that are not in Python (rest_kit, jdbc) for their
# balanced runs: three `skade serve` behind nginx through balanced_serve.py, in the Python suite's
# pinned virtualenv. Needs ROOT (the repository) and SKADE_BIN; uses no other state of the caller.
#
#   balanced_start DIR ARGS…   starts balanced_serve.py --out DIR ARGS… in the background and waits
#                              (60 s at most) until it listens; sets balanced_pid, balanced_flight
#                              (grpc://…), balanced_rest (http://… or -), balanced_pids (A,B,C).
#                              Returns 77 with a plain message when nginx or the virtualenv is
#                              missing, 1 when it did not start.
#   balanced_signal PID…       SIGTERM to several launchers at once (balanced_stop then waits).
#   balanced_stop DIR          SIGTERM (unless balanced_signal sent it); returns the launcher's
#                              verdict (0: every server answered calls, none failed in nginx, all
#                              stopped cleanly) and prints its report; DIR/balanced.err keeps it.
#                              A launcher still running 180 s later is killed and the stop fails
#                              (137).

balanced_start() {
  local dir="$1" venv i
  shift
  if ! venv="$("$ROOT/scripts/interop_env.sh" python venv 2>/dev/null)"; then
    echo "the Python interop virtualenv (nginx launcher) is not installed: run scripts/setup_interop.sh" >&2
    return 77
  fi
  mkdir -p "$dir"
  # -B: no bytecode in the source tree.
  SKADE_BIN="$SKADE_BIN" "$venv/bin/python" -B "$ROOT/tests/interop/engines/python/balanced_serve.py" \
    --out "$dir" "$@" >"$dir/balanced.out" 2>"$dir/balanced.err" </dev/null &
  balanced_pid=$!
  local line=""
  for i in $(seq 1 600); do
    line="$(grep -m1 '^ready ' "$dir/balanced.out" || true)"
    [ -n "$line" ] && break
    if ! kill -0 "$balanced_pid" 2>/dev/null; then
      local rc=0
      wait "$balanced_pid" || rc=$?
      balanced_pid=""
      cat "$dir/balanced.err" >&2
      [ "$rc" -eq 77 ] && return 77
      return 1
    fi
    sleep 0.1
  done
  if [ -z "$line" ]; then
    echo "the balanced servers did not start within 60 s:" >&2
    tail -n 40 "$dir/balanced.err" >&2
    return 1
  fi
  balanced_flight="$(sed -n 's/.* flight=\([^ ]*\).*/\1/p' <<<"$line")"
  balanced_rest="$(sed -n 's/.* rest=\([^ ]*\).*/\1/p' <<<"$line")"
  balanced_pids="$(sed -n 's/.* pids=\([^ ]*\).*/\1/p' <<<"$line")"
}

balanced_stop() {
  local dir="$1" rc=0 i
  [ -n "${balanced_pid:-}" ] || return 1
  # One SIGTERM per launcher (balanced_signal may have sent it already, to stop several at once).
  case "${balanced_signalled:-}" in
    *" $balanced_pid "*) ;;
    *) kill -TERM "$balanced_pid" 2>/dev/null || true ;;
  esac
  # The launcher's own waits end within 150 s (nginx 15 s, each server 45 s); past 180 s it hangs,
  # which fails here with what it logged rather than at ctest's timeout with nothing.
  for i in $(seq 1 1800); do
    kill -0 "$balanced_pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$balanced_pid" 2>/dev/null; then
    kill -KILL "$balanced_pid" 2>/dev/null || true
    echo "balanced_serve: FAIL: the launcher did not stop within 180 s of SIGTERM (killed)" >>"$dir/balanced.err"
  fi
  wait "$balanced_pid" || rc=$?
  balanced_pid=""
  cat "$dir/balanced.err"
  return "$rc"
}

# balanced_signal PID…: SIGTERM to launchers started by balanced_start, so that they stop at
# once; balanced_stop then waits for each (with balanced_pid set to it) without signalling again.
balanced_signal() {
  local pid
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  balanced_signalled=" $* "
}
