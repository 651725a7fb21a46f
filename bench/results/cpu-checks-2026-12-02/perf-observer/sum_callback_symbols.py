import re, subprocess, sys
data, calls = sys.argv[1], float(sys.argv[2])  # total observed calls during the run
out = subprocess.run(["perf", "report", "-i", data, "--sort", "dso,sym", "--stdio", "-F", "period,dso,sym"], capture_output=True, text=True).stdout
pat = re.compile(r"RecordFunction|CallbackManager|StepCallbacks|getStepCallbacks|SlowPath|runRecordFunction|visprof|nvtx|mutex|Snapshot|rebuild|setCallbackEnabled|disableCallback|reenableCallback|tls_get_addr|ObserverContext|on_enter|on_exit|op_enter|op_exit|push_registered|monotonic|_visprof", re.I)
tot = 0; rows = []
for line in out.splitlines():
    if line.startswith("#") or not line.strip(): continue
    parts = line.split(None, 2)
    if len(parts) < 3: continue
    try: period = int(parts[0])
    except ValueError: continue
    if pat.search(parts[2]):
        rows.append((period, parts[1][:30], parts[2][:110])); tot += period
# period is in cycles (cpu-clock: ns)
for p, d, s in sorted(rows, reverse=True)[:25]:
    print(f"{p/calls:8.1f} {d:30s} {s}")
print("total per call", tot / calls)
