#!/bin/bash
# usage: run.sh KIT ATTACKS NAME [exercise...]: grade one attack of make.py's with the audit hook off
# -> /tmp/a5/NAME/{results.json,log,time}; prints its time and score
set -u
kit=$1 attacks=$2 name=$3; shift 3
args=""; for e in ${*:-8}; do args="$args --exercise $e"; done
out=/tmp/a5/$name; rm -rf "$out"; mkdir -p "$out"
sub=$attacks/$name
[ -f "$sub/submission.zip" ] && sub=$sub/submission.zip
export OPTLAB_WORKER_UIDS=${OPTLAB_WORKER_UIDS:-60900-61199} OPTLAB_LAYERS_OFF=audit_hook
/usr/bin/time -f "%e s wall, %U user, %S sys, %M KB maxrss" -o "$out/time" "$kit/.venv/bin/python" -m grader grade "$sub" -o "$out/results.json" $args > "$out/log" 2>&1
echo "rc=$?" >> "$out/time"
echo "$name: $(tr '\n' ' ' < "$out/time") score=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['score'])" "$out/results.json" 2>/dev/null)"
