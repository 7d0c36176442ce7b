# Build notes/ with files in the encodings they arrived in.
python3 - <<'PY'
import json, os
SPEC = json.loads(r'''{
 "notes/export_utf16.csv": [
  "utf-16-le-bom",
  "\r\n",
  "city,country,population\nM\u00fcnchen,Deutschland,1512491\n\u6771\u4eac,\u65e5\u672c,13960000\nS\u00e3o Paulo,Brasil,11451245\nGie\u00dfen,Deutschland,90131\n"
 ],
 "notes/names_be.txt": [
  "utf-16-be-bom",
  "\n",
  "\u00c9milie\n\u00d0\u00f3ra\nY\u0101\u0161a\n"
 ],
 "notes/ok.txt": [
  "utf-8",
  "\n",
  "Already fine: ma\u00f1ana, \u00f8l, \u03b1\u03b2\u03b3, \u0436\u0443\u0440\u043d\u0430\u043b.\nDo not touch.\n"
 ],
 "notes/old/legacy.ini": [
  "latin-1",
  "\r\n",
  "[shop]\ncurrency = \u00a3\nowner = J\u00fcrgen M\u00fcller\ngreeting = \u00a1Hola! \u00bfQu\u00e9 tal?\n"
 ],
 "notes/old/todo.txt": [
  "latin-1",
  "\r\n",
  "r\u00e9sum\u00e9 for the caf\u00e9 job\nbuy 2\u00d7 AA batteries\nno trailing newline on this last line \u00e7a va"
 ],
 "notes/readme_bom.md": [
  "utf-8-sig",
  "\n",
  "# Team notes \u2014 Q2\n\n* \u201cShip it\u201d checklist lives in the wiki\n* On-call rota: Zo\u00eb \u2192 Bj\u00f6rn \u2192 \u0141ukasz\n* Budget: \u20ac4\u202f200\n"
 ],
 "notes/recettes.txt": [
  "latin-1",
  "\n",
  "Tarte Tatin (pour 6)\n\nPr\u00e9chauffer le four \u00e0 180\u00b0C.\nFaire fondre 120 g de beurre avec 150 g de sucre, puis ajouter les pommes coup\u00e9es en quartiers.\nCuire \u00bd heure ; servir ti\u00e8de avec une cr\u00e8me fra\u00eeche \u00e9paisse.\nCo\u00fbt estim\u00e9 : 7,50 \u00a3 / 8,90 \u00a4 (sic)\n"
 ],
 "notes/windows_notes.txt": [
  "utf-8",
  "\r\n",
  "Meeting 2024-04-02\nAttendees: Ren\u00e9e, Fran\u00e7ois, \u00c5sa\n- the na\u00efve caf\u00e9 benchmark is flaky\n- move the stand-up to 09:30\n"
 ]
}''')
for path, (enc, nl, text) in sorted(SPEC.items()):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = text.replace("\n", nl)
    if enc == "utf-16-le-bom":
        data = b"\xff\xfe" + text.encode("utf-16-le")
    elif enc == "utf-16-be-bom":
        data = b"\xfe\xff" + text.encode("utf-16-be")
    else:
        data = text.encode(enc)
    with open(path, "wb") as fh:
        fh.write(data)
PY
