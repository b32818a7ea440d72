"""Score every BLEU claim's output with real sacreBLEU (issue 48): records/sacrebleu-check/sacrebleu.json.

Run where `import sacrebleu` works (Debian bookworm has no python3-sacrebleu and this project installs no
pip packages, so not in .ci/run): python3 scripts/sacrebleu-check.py [OUT_DIR]. check-records then compares
each BLEU claim with sacreBLEU's line for the same files (same sha256), and qkv's scorer with both.
"""
import gzip, hashlib, json, os, sys
import sacrebleu

def lines(p):
    with (gzip.open if p.endswith(".gz") else open)(p, "rt", encoding="utf8") as f:
        return [l.rstrip("\n") for l in f]

def sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()

out = {"sacrebleu": sacrebleu.__version__, "python": sys.version.split()[0], "claims": {}}
for c in json.load(open("records/claims.json"))["claims"]:
    if c["kind"] != "bleu":
        continue
    m = sacrebleu.metrics.BLEU(lowercase=c.get("lowercase", False))
    s = m.corpus_score(lines(c["output"]), [lines(c["ref"])])
    out["claims"][c["id"]] = {"output": c["output"], "ref": c["ref"], "output_sha256": sha(c["output"]),
                              "ref_sha256": sha(c["ref"]), "line": str(s), "signature": str(m.get_signature())}
dest = sys.argv[1] if len(sys.argv) > 1 else "records/sacrebleu-check"
os.makedirs(dest, exist_ok=True)
json.dump(out, open(os.path.join(dest, "sacrebleu.json"), "w", encoding="utf8"), indent=1, ensure_ascii=False)
print(f"sacreBLEU {sacrebleu.__version__}: {len(out['claims'])} BLEU claims scored")
