#!/bin/bash
# $1: a label. pip against a refused host through `gtd sandbox run` (gtd on PATH): through the proxy (CONNECT), and
# direct (NO_PROXY=*, a client ignoring the proxy: caught on the intercepted port). Time and lines on stderr.
repo=$(mktemp -d); git -C "$repo" init -q; git -C "$repo" commit -q --allow-empty -m init; cd "$repo"
for mode in proxy direct; do
  envs=""; [ $mode = direct ] && envs="NO_PROXY=* no_proxy=*"
  for i in 1 2 3; do
    s=$(date +%s.%N)
    gtd sandbox run --level network -- env $envs python3 -m pip download --isolated --no-deps --no-cache-dir -d "$repo/dl" --index-url https://pypi.denied.example/simple six < /dev/null > "$repo/out-$mode.txt" 2>&1
    e=$(date +%s.%N)
    printf "%s %s run%d: %.1fs, refusal lines %d, retry lines %d\n" $1 $mode $i $(echo "$e - $s" | bc) $(grep -c "refused network" "$repo/out-$mode.txt") $(grep -c "Retrying" "$repo/out-$mode.txt")
  done
done
