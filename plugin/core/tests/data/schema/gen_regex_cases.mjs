// Writes regex_cases.json: random patterns and texts with the answers of the JavaScript
// engine's own RegExp (flag "u": code-point matching, as toolseal's matcher does).
// The Rust test `regex_agrees_with_javascript` replays them. Regenerate with:
//   node gen_regex_cases.mjs > regex_cases.json
let seed = 20261129;
function rand(n) {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % n;
}
const atoms = ["a", "b", "c", ".", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "\\b", "\\B",
  "[a-c]", "[^a]", "[\\d_]", "[b-]", "^", "$", "(", ")", "(?:", "|", "*", "+", "?", "*?",
  "{2}", "{1,}", "{0,2}", "{2,3}?", "-", "\\.", "\\u0061", "\\x62", "é", "😀", "[😀-😂]", " ",
  "(?=a)", "(?!b)", "(?=.*c)", "(?!\\d)", "(?=", "(?!"];
const chars = ["a", "b", "c", "_", "1", "-", ".", " ", "\n", "é", "😀", "😁", "\u00a0"];
const cases = [];
while (cases.length < 1500) {
  let p = "";
  const len = 1 + rand(7);
  for (let i = 0; i < len; i++) p += atoms[rand(atoms.length)];
  let re;
  try { re = new RegExp(p, "u"); } catch (e) { continue; }
  const texts = [];
  for (let t = 0; t < 4; t++) {
    let s = "";
    const n = rand(7);
    for (let i = 0; i < n; i++) s += chars[rand(chars.length)];
    texts.push([s, re.test(s)]);
  }
  cases.push({ pattern: p, texts });
}
console.log(JSON.stringify(cases, null, 0).replace(/\},\{/g, "},\n{"));
