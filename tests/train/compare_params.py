"""compare_params.py A B [TOL]: max relative difference of two parameter
dumps (one value per line); exits 1 when it exceeds TOL (default 1e-5)."""
import sys

a = [float(l) for l in open(sys.argv[1])]
b = [float(l) for l in open(sys.argv[2])]
tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
if len(a) != len(b) or not a:
    print(f"FAIL: {sys.argv[1]} has {len(a)} values, {sys.argv[2]} has {len(b)}")
    sys.exit(1)
# Relative to the larger magnitude, floored so near-zero weights are compared absolutely.
rel = max(abs(x - y) / max(abs(x), abs(y), 1e-3) for x, y in zip(a, b))
status = "ok" if rel <= tol else "FAIL"
print(f"{status}: max relative difference {rel:.3e} (tolerance {tol:g}) "
      f"between {sys.argv[1]} and {sys.argv[2]} ({len(a)} values)")
sys.exit(0 if rel <= tol else 1)
