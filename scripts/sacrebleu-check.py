"""Score every BLEU claim's output with real sacreBLEU (issues 48, 61): records/sacrebleu-check/sacrebleu.json.

Run with the reference environment, which .ci/run builds (bash scripts/ref-env.sh: sacreBLEU 2.6.0 of
python/ref-requirements.txt, from the machine's local wheel index):
    .venv-ref/bin/python scripts/sacrebleu-check.py [OUT_DIR]     (default records/sacrebleu-check)
In CI, test/records/sacrebleu.once.test.ts runs it into a scratch folder: every claim's line must equal the
line sacreBLEU prints, and the committed record must equal the fresh one byte for byte (so the file names no
interpreter version: the same sacreBLEU on the same files writes the same bytes anywhere). check-records
then compares each BLEU claim with this record's line for the same files (same sha256), and qkv's scorer
with both.
"""
import gzip, hashlib, json, os, sys
import sacrebleu

def lines(p):
    with (gzip.open if p.endswith(".gz") else open)(p, "rt", encoding="utf8") as f:
        return [l.rstrip("\n") for l in f]

def sha(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()

out = {"sacrebleu": sacrebleu.__version__, "claims": {}}
for c in json.load(open("records/claims.json"))["claims"]:
    if c["kind"] != "bleu":
        continue
    m = sacrebleu.metrics.BLEU(lowercase=c.get("lowercase", False))
    s = m.corpus_score(lines(c["output"]), [lines(c["ref"])])
    out["claims"][c["id"]] = {"output": c["output"], "ref": c["ref"], "output_sha256": sha(c["output"]),
                              "ref_sha256": sha(c["ref"]), "line": str(s), "signature": str(m.get_signature())}
dest = sys.argv[1] if len(sys.argv) > 1 else "records/sacrebleu-check"
os.makedirs(dest, exist_ok=True)
with open(os.path.join(dest, "sacrebleu.json"), "w", encoding="utf8") as f:
    json.dump(out, f, indent=1, ensure_ascii=False)
print(f"sacreBLEU {sacrebleu.__version__}: {len(out['claims'])} BLEU claims scored")
