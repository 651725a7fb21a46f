"""Times ProfileResult.from_dict over the documents of a store (json already parsed), and prints a digest."""
import hashlib
import sys
import time

from visprof.store.result_store import ResultStore
from visprof.result import ProfileResult
store = ResultStore(sys.argv[1])
docs = list(store.result_documents())
best = []
for r in range(3):
    t = time.perf_counter()
    results = [ProfileResult.from_dict(d) for d in docs]
    best.append(time.perf_counter() - t)
digest = hashlib.sha256(repr([r.to_dict() for r in results]).encode()).hexdigest()[:16]
print(f"{len(docs)} docs: decode {min(best):.2f} s (runs {', '.join(f'{b:.2f}' for b in best)}) digest {digest}")
