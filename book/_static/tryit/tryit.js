// "Try it": a trained ViT in the page, with ONNX Runtime Web (WebAssembly). No kernel, no network.
// The shipped model and the test images are written by `make book` (python -m vit_edu.book.export) next to this
// script; a reader may open another export of the package from disk. Each model describes itself in its ONNX
// file's metadata (classes, image and patch size, layers, heads), which the page reads and checks against the
// graph. Every change of the input runs the model once and redraws every view from its outputs.
(function () {
  "use strict";
  const base = document.currentScript.src.replace(/tryit\/tryit\.js.*$/, "");  // .../_static/
  const root = document.getElementById("tryit");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const status = $("tryit-status");
  const BACKGROUND = [24, 24, 28];  // a dark background, as in the shapes task
  // The words the script writes, from the page (its JSON block is translated with the page's other text).
  const TEXT = JSON.parse($("tryit-text").textContent);
  const say = (key, values = {}) => TEXT[key].replace(/\{(\w+)\}/g, (_, name) => String(values[name]));
  const className = (name) => TEXT.classes[name] || name;  // the class's name in the page's language

  const FORMAT = "vit_edu.tryit/1";  // vit_edu.book.export.FORMAT: the metadata this page reads
  const OUTPUTS = ["logits", "attentions", "pooled", "lens_logits"];
  const SHIPPED = "shapes_vit.onnx";  // the book's own model, next to this script
  let examples = null;    // the test images (examples.json): RGB bytes, what each shows
  let meta = null;        // the open model's description, from its metadata
  let session = null;     // the ONNX Runtime session of the open model
  let pixels = null;      // the input: RGBA bytes of an H×W image, at the model's size
  let second = null;      // a second model to compare, run on the same drawing, or null
  let cursor = [0, 0];    // the keyboard brush position (x, y)
  let changedAt = null, running = false, dirty = false;
  const api = { runs: 0, last: null, ready: null, announced: 0 };  // for the book's browser test and benchmark
  Object.defineProperty(api, "busy", { get: () => running || dirty || changedAt !== null });
  window.vitTryIt = api;

  // ---- input -------------------------------------------------------------------------------------------
  function size() { return meta.image_size; }  // [H, W]

  function clearInput() {
    const [h, w] = size();
    pixels = new Uint8ClampedArray(h * w * 4);
    for (let i = 0; i < h * w; i++) pixels.set([...BACKGROUND, 255], 4 * i);
  }

  function setRGB(rgb, [eh, ew]) {  // rgb: eh*ew*3 bytes, row-major; squeezed to the model's size if it differs
    const rgba = new Uint8ClampedArray(eh * ew * 4);
    for (let i = 0; i < eh * ew; i++) rgba.set([rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2], 255], 4 * i);
    const [h, w] = size();
    if (h === eh && w === ew) { pixels = rgba; return; }
    const c = document.createElement("canvas");
    c.width = ew; c.height = eh;
    c.getContext("2d").putImageData(new ImageData(rgba, ew, eh), 0, 0);
    squeeze(c);
  }

  function squeeze(source) {  // any picture (canvas, bitmap) drawn at the model's H×W, as the model reads it
    pixels = squeezed(source, size());
  }

  function squeezed(source, [h, w]) {  // RGBA bytes of ``source`` drawn at H×W
    if (source.width === w && source.height === h && source.getContext)
      return source.getContext("2d").getImageData(0, 0, w, h).data;
    const c = document.createElement("canvas");
    c.width = w; c.height = h;
    const ctx = c.getContext("2d");
    ctx.imageSmoothingQuality = "high";
    ctx.drawImage(source, 0, 0, w, h);
    return ctx.getImageData(0, 0, w, h).data;
  }

  function paint(x, y) {
    const [h, w] = size();
    const radius = Number($("tryit-brush").value) / 2;
    const colour = $("tryit-colour").value;  // #rrggbb
    const rgb = [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16));
    for (let yy = Math.floor(y - radius); yy <= Math.ceil(y + radius); yy++) {
      for (let xx = Math.floor(x - radius); xx <= Math.ceil(x + radius); xx++) {
        if (yy < 0 || xx < 0 || yy >= h || xx >= w) continue;
        if ((xx - x) ** 2 + (yy - y) ** 2 <= radius * radius) pixels.set([...rgb, 255], 4 * (yy * w + xx));
      }
    }
  }

  function inputTensor(pix = pixels, m = meta) {  // (1, C, H, W) floats in [0, 1]: RGB, or their mean for 1 channel
    const [h, w] = m.image_size, channels = m.in_channels;
    const data = new Float32Array(channels * h * w);
    for (let i = 0; i < h * w; i++) {
      if (channels === 3) for (let c = 0; c < 3; c++) data[c * h * w + i] = pix[4 * i + c] / 255;
      else data[i] = (pix[4 * i] + pix[4 * i + 1] + pix[4 * i + 2]) / 765;
    }
    return new ort.Tensor("float32", data, [1, channels, h, w]);
  }

  // ---- a model from its file -----------------------------------------------------------------------------
  // The ONNX file is a protocol buffer (ModelProto); its metadata_props are field 14, each a key (1) and a
  // value (2). Only the top level is read; every other field, the graph included, is skipped by its length.
  function readMetadata(bytes) {
    let pos = 0;
    const varint = (end) => {
      let value = 0, shift = 0, byte;
      do {
        if (pos >= end) throw new Error("truncated");
        byte = bytes[pos++];
        value += (byte & 0x7f) * 2 ** shift;
        shift += 7;
      } while (byte & 0x80);
      return value;
    };
    const fields = (end, visit) => {
      while (pos < end) {
        const key = varint(end), field = Math.floor(key / 8), wire = key % 8;
        if (wire === 0) varint(end);
        else if (wire === 1) pos += 8;
        else if (wire === 5) pos += 4;
        else if (wire === 2) {
          const length = varint(end), stop = pos + length;
          if (stop > end) throw new Error("truncated");
          visit(field, pos, stop);
          pos = stop;
        } else throw new Error(`wire type ${wire}`);
        if (pos > end) throw new Error("truncated");
      }
    };
    const text = (start, stop) => new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(start, stop));
    const props = {};
    fields(bytes.length, (field, start, stop) => {
      if (field !== 14) return;
      const entry = {};
      const outer = pos;
      pos = start;
      fields(stop, (f, a, b) => { if (f === 1) entry.key = text(a, b); else if (f === 2) entry.value = text(a, b); });
      pos = outer;
      if (entry.key !== undefined) props[entry.key] = entry.value ?? "";
    });
    return props;
  }

  // The metadata as numbers and lists, checked: a file without this page's format, or with values it cannot
  // draw, is refused with what is wrong.
  function describeModel(props) {
    if (props.format !== FORMAT) throw new Error(say("not_export", { format: FORMAT }));
    const get = (key) => {
      if (!(key in props)) throw new Error(say("bad_metadata", { key, value: "—" }));
      try { return JSON.parse(props[key]); } catch (err) { throw new Error(say("bad_metadata", { key, value: props[key] })); }
    };
    const whole = (key) => {
      const v = get(key);
      if (!Number.isInteger(v) || v < 1) throw new Error(say("bad_metadata", { key, value: props[key] }));
      return v;
    };
    const d = {
      classes: get("classes"), image_size: get("image_size"), patch_size: whole("patch_size"),
      in_channels: whole("in_channels"), num_layers: whole("num_layers"), num_heads: whole("num_heads"),
      num_prefix_tokens: get("num_prefix_tokens"), pooling: props.pooling, input_norm: get("input_norm"),
    };
    if (!Array.isArray(d.classes) || !d.classes.length || !d.classes.every((c) => typeof c === "string" && c))
      throw new Error(say("bad_metadata", { key: "classes", value: props.classes }));
    if (!Array.isArray(d.image_size) || d.image_size.length !== 2 || !d.image_size.every((v) => Number.isInteger(v) && v > 0)
        || d.image_size.some((v) => v % d.patch_size) || Math.max(...d.image_size) > 256)
      throw new Error(say("bad_metadata", { key: "image_size", value: props.image_size }));
    if (d.in_channels !== 1 && d.in_channels !== 3) throw new Error(say("bad_channels", { channels: d.in_channels }));
    if (d.num_prefix_tokens !== 0 && d.num_prefix_tokens !== 1)
      throw new Error(say("bad_metadata", { key: "num_prefix_tokens", value: props.num_prefix_tokens }));
    return d;
  }

  // One run on a blank image checks the graph against the metadata: its input and outputs, and their shapes.
  async function checkGraph(created, d) {
    if (created.inputNames.length !== 1 || created.inputNames[0] !== "images"
        || OUTPUTS.some((name) => !created.outputNames.includes(name)))
      throw new Error(say("bad_graph", { what: `${created.inputNames.join(", ")} → ${created.outputNames.join(", ")}`,
                                         want: `images → ${OUTPUTS.join(", ")}` }));
    const [h, w] = d.image_size;
    const out = await created.run({ images: new ort.Tensor("float32", new Float32Array(d.in_channels * h * w), [1, d.in_channels, h, w]) });
    const S = d.num_prefix_tokens + (h / d.patch_size) * (w / d.patch_size), K = d.classes.length;
    const want = { logits: [1, K], attentions: [d.num_layers, 1, d.num_heads, S, S], lens_logits: [d.num_layers, 1, K] };
    for (const [name, dims] of Object.entries(want)) {
      if (out[name].dims.join("×") !== dims.join("×"))
        throw new Error(say("bad_graph", { what: `${name} ${out[name].dims.join("×")}`, want: `${name} ${dims.join("×")}` }));
    }
  }

  // A model from the bytes of its file: read, checked, and timed. Throws (with what is wrong) if refused.
  async function openModel(bytes, name) {
    const started = performance.now();
    let props;
    try { props = readMetadata(bytes); } catch (err) { throw new Error(say("not_onnx", { error: err.message })); }
    const d = describeModel(props);
    let created;
    try { created = await ort.InferenceSession.create(bytes, { executionProviders: ["wasm"] }); }
    catch (err) { throw new Error(say("not_onnx", { error: err.message })); }
    await checkGraph(created, d);
    return { meta: d, session: created, name, bytes: bytes.length, load_ms: performance.now() - started };
  }

  function changed() {  // every control ends here: run the model on the new input
    if (changedAt === null) changedAt = performance.now();
    drawInput();
    if (running) { dirty = true; return; }
    run();
  }

  // ---- model -------------------------------------------------------------------------------------------
  async function run() {
    running = true;
    dirty = false;
    const start = changedAt;
    changedAt = null;
    const input = inputTensor();
    const modelStart = performance.now();
    const out = await session.run({ images: input });
    const modelMs = performance.now() - modelStart;
    const views = compute(out);
    drawOutputs(views);
    api.second = second ? await runSecond() : null;
    views.ms = performance.now() - start;  // from the input change to every view redrawn
    views.model_ms = modelMs;              // of which the model itself
    $("tryit-model-update").textContent = say("last_update", { ms: views.ms.toFixed(0), model: modelMs.toFixed(0) });
    views.input = Array.from(input.data);
    api.last = views;
    api.runs += 1;
    running = false;
    if (dirty) { if (changedAt === null) changedAt = performance.now(); run(); }
  }

  function softmax(values) {
    const m = Math.max(...values);
    const e = values.map((v) => Math.exp(v - m));
    const s = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / s);
  }

  function compute(out) {
    const logits = Array.from(out.logits.data);
    const [L, , heads, S] = out.attentions.dims;  // (L, 1, h, S, S)
    const k = logits.length;
    const lens = [];
    for (let l = 0; l < L; l++) lens.push(...softmax(Array.from(out.lens_logits.data.slice(l * k, (l + 1) * k))));
    return {
      logits, probabilities: softmax(logits), lens_probabilities: lens,
      attentions: Array.from(out.attentions.data), rollout: rollout(out.attentions.data, L, heads, S),
      L, heads, S,
    };
  }

  // Attention rollout as vit_edu.explain.attention_rollout computes it (mean over heads, no discarding): per
  // layer, add the identity for the residual path, renormalise every row, and multiply the layers in order.
  function rollout(att, L, heads, S) {
    let r = identity(S);
    for (let l = 0; l < L; l++) {
      const step = new Float64Array(S * S);
      for (let hh = 0; hh < heads; hh++) {
        const off = (l * heads + hh) * S * S;
        for (let i = 0; i < S * S; i++) step[i] += att[off + i] / heads;
      }
      for (let i = 0; i < S; i++) {
        step[i * S + i] += 1;
        let sum = 0;
        for (let j = 0; j < S; j++) sum += step[i * S + j];
        for (let j = 0; j < S; j++) step[i * S + j] /= sum;
      }
      r = matmul(step, r, S);
    }
    return Array.from(r);
  }

  function identity(n) { const m = new Float64Array(n * n); for (let i = 0; i < n; i++) m[i * n + i] = 1; return m; }

  function matmul(a, b, n) {
    const c = new Float64Array(n * n);
    for (let i = 0; i < n; i++) for (let kk = 0; kk < n; kk++) {
      const v = a[i * n + kk];
      for (let j = 0; j < n; j++) c[i * n + j] += v * b[kk * n + j];
    }
    return c;
  }

  // ---- drawing -----------------------------------------------------------------------------------------
  function imageCanvas(pix = pixels, [h, w] = size()) {  // an input as a canvas of H×W pixels
    const c = document.createElement("canvas");
    c.width = w; c.height = h;
    c.getContext("2d").putImageData(new ImageData(pix, w, h), 0, 0);
    return c;
  }

  function drawInput() {
    const canvas = $("tryit-canvas");
    const ctx = canvas.getContext("2d");
    const [h, w] = size();
    const p = meta.patch_size, cell = canvas.width / w;
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(imageCanvas(), 0, 0, canvas.width, canvas.height);
    ctx.strokeStyle = "rgba(255, 255, 255, 0.55)";
    ctx.lineWidth = 1;
    for (let i = 1; i < w / p; i++) line(ctx, i * p * cell, 0, i * p * cell, canvas.height);
    for (let i = 1; i < h / p; i++) line(ctx, 0, i * p * cell, canvas.width, i * p * cell);
    if (document.activeElement === canvas) {
      ctx.strokeStyle = "#ff3b30";
      ctx.strokeRect(cursor[0] * cell + 0.5, cursor[1] * cell + 0.5, cell - 1, cell - 1);
    }
  }

  function line(ctx, x0, y0, x1, y1) { ctx.beginPath(); ctx.moveTo(x0 + 0.5, y0 + 0.5); ctx.lineTo(x1 + 0.5, y1 + 0.5); ctx.stroke(); }

  // The image, dimmed, with each patch tinted by its weight (scaled to the largest weight of the map).
  function heatmap(canvas, weights, m = meta, image = imageCanvas()) {
    const [h, w] = m.image_size;
    const p = m.patch_size, gw = w / p, gh = h / p;
    const ctx = canvas.getContext("2d");
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(image, 0, 0, canvas.width, canvas.height);
    ctx.fillStyle = "rgba(0, 0, 0, 0.45)";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    const top = Math.max(...weights);
    const cw = canvas.width / gw, ch = canvas.height / gh;
    weights.forEach((v, i) => {
      ctx.fillStyle = `rgba(255, 140, 0, ${(0.9 * v / top).toFixed(3)})`;
      ctx.fillRect((i % gw) * cw, Math.floor(i / gw) * ch, cw, ch);
    });
  }

  function describe(weights, m = meta) {  // where the map puts most weight, for screen readers and the caption
    const gw = m.image_size[1] / m.patch_size;
    const i = weights.indexOf(Math.max(...weights));
    return say("most_weight", { row: Math.floor(i / gw) + 1, column: (i % gw) + 1, percent: (100 * weights[i]).toFixed(0) });
  }

  // What the pooled token draws from a matrix of S×S weights at ``off``: the CLS query's row (row 0, patch
  // columns), or for mean pooling the mean of every query's row, since the head reads the mean of all tokens.
  function pooledRow(matrix, off, S, m = meta) {
    if (m.num_prefix_tokens === 1) return Array.from(matrix.slice(off + 1, off + S));
    const row = new Array(S).fill(0);
    for (let i = 0; i < S; i++) for (let j = 0; j < S; j++) row[j] += matrix[off + i * S + j] / S;
    return row;
  }

  function clsRow(views, l, hh) {  // one layer and head's map: the pooled token's weights on the patches
    return pooledRow(views.attentions, (l * views.heads + hh) * views.S * views.S, views.S);
  }

  // Predictions, logit lens and rollout of one model into the elements named ``ids`` (the main model's, or the
  // compared model's); returns the index of the top class.
  function drawSummary(views, m, ids, image) {
    const classes = m.classes.map(className);
    const best = views.probabilities.indexOf(Math.max(...views.probabilities));
    $(ids.probs).innerHTML = classes.map((name, i) => {
      const pct = 100 * views.probabilities[i];
      return `<div class="tryit-bar${i === best ? " tryit-best" : ""}"><span class="tryit-bar-label">${name}</span>` +
        `<span class="tryit-bar-track"><span style="width:${pct.toFixed(1)}%"></span></span>` +
        `<span class="tryit-bar-value">${pct.toFixed(1)}%</span></div>`;
    }).join("");
    const k = classes.length;
    let rows = `<thead><tr><th scope="col">${say("after_block")}</th>${classes.map((c) => `<th scope="col">${c}</th>`).join("")}</tr></thead><tbody>`;
    for (let l = 0; l < views.L; l++) {
      const probs = views.lens_probabilities.slice(l * k, (l + 1) * k);
      const top = probs.indexOf(Math.max(...probs));
      rows += `<tr><th scope="row">${l + 1}</th>` + probs.map((p, i) =>
        `<td${i === top ? ' class="tryit-best"' : ""}>${(100 * p).toFixed(1)}%</td>`).join("") + "</tr>";
    }
    $(ids.lens).innerHTML = rows + "</tbody>";
    const roll = pooledRow(views.rollout, 0, views.S, m);  // what reaches the pooled token through the layers
    const total = roll.reduce((a, b) => a + b, 0);
    const share = roll.map((v) => v / total);
    views.rollout_map = share;
    const canvas = $(ids.rollout);
    heatmap(canvas, share, m, image);
    const text = say(m.num_prefix_tokens ? "rollout" : "rollout_mean", { where: describe(share, m) });
    canvas.setAttribute("aria-label", text);
    $(ids.caption).textContent = text;
    return best;
  }

  const MAIN = { probs: "tryit-probs", lens: "tryit-lens", rollout: "tryit-rollout-canvas", caption: "tryit-rollout-caption" };
  const SECOND = { probs: "tryit-b-probs", lens: "tryit-b-lens", rollout: "tryit-b-rollout-canvas", caption: "tryit-b-rollout-caption" };

  function drawOutputs(views) {
    const best = drawSummary(views, meta, MAIN, imageCanvas());
    const grid = $("tryit-attention");
    for (let l = 0; l < views.L; l++) for (let hh = 0; hh < views.heads; hh++) {
      const weights = clsRow(views, l, hh);
      const figure = grid.querySelector(`[data-map="${l}-${hh}"]`);
      heatmap(figure.querySelector("canvas"), weights);
      figure.querySelector("canvas").setAttribute("aria-label", say("map_label", { layer: l + 1, head: hh, where: describe(weights) }));
    }
    show(say("prediction", { name: className(meta.classes[best]), percent: (100 * views.probabilities[best]).toFixed(1) }));
  }

  // The status line changes with every stroke; a screen reader hears it once, when the reader pauses (an error at
  // once).
  let announcing = null;
  function show(text, now = false) {
    status.textContent = text;
    clearTimeout(announcing);
    const speak = () => { $("tryit-announce").textContent = text; api.announced += 1; };
    if (now) speak(); else announcing = setTimeout(speak, 600);
  }

  // The compared model on the same drawing, squeezed to its own input size.
  async function runSecond() {
    const m = second.meta, pix = squeezed(imageCanvas(), m.image_size);
    const input = inputTensor(pix, m);
    const out = await second.session.run({ images: input });
    const views = compute(out);
    const best = drawSummary(views, m, SECOND, imageCanvas(pix, m.image_size));
    $("tryit-b-prediction").textContent = say("prediction", { name: className(m.classes[best]), percent: (100 * views.probabilities[best]).toFixed(1) });
    views.input = Array.from(input.data);
    return views;
  }

  function buildAttentionGrid(L, heads) {
    const grid = $("tryit-attention");
    grid.style.setProperty("--heads", heads);
    grid.innerHTML = "";
    for (let l = 0; l < L; l++) for (let hh = 0; hh < heads; hh++) {
      const figure = document.createElement("figure");
      figure.dataset.map = `${l}-${hh}`;
      figure.innerHTML = `<canvas width="96" height="96" role="img"></canvas><figcaption>${say("map_caption", { layer: l + 1, head: hh })}</figcaption>`;
      grid.appendChild(figure);
    }
  }

  // ---- controls ----------------------------------------------------------------------------------------
  function pointerCell(event) {
    const canvas = $("tryit-canvas"), rect = canvas.getBoundingClientRect(), [h, w] = size();
    return [Math.floor((event.clientX - rect.left) / rect.width * w), Math.floor((event.clientY - rect.top) / rect.height * h)];
  }

  function wireControls() {
    const canvas = $("tryit-canvas");
    let drawing = false;
    canvas.addEventListener("pointerdown", (e) => { drawing = true; canvas.setPointerCapture(e.pointerId); cursor = pointerCell(e); paint(...cursor); changed(); });
    canvas.addEventListener("pointermove", (e) => { if (drawing) { cursor = pointerCell(e); paint(...cursor); changed(); } });
    canvas.addEventListener("pointerup", () => { drawing = false; });
    canvas.addEventListener("pointercancel", () => { drawing = false; });
    canvas.addEventListener("focus", drawInput);
    canvas.addEventListener("blur", drawInput);
    canvas.addEventListener("keydown", (e) => {
      const [h, w] = size();
      const moves = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
      if (moves[e.key]) {
        cursor = [Math.min(w - 1, Math.max(0, cursor[0] + moves[e.key][0])), Math.min(h - 1, Math.max(0, cursor[1] + moves[e.key][1]))];
        if (e.shiftKey) { paint(...cursor); changed(); } else drawInput();
      } else if (e.key === " " || e.key === "Enter") { paint(...cursor); changed(); }
      else if (e.key === "Delete" || e.key === "Backspace") { clearInput(); changed(); }
      else return;
      e.preventDefault();
    });
    $("tryit-clear").addEventListener("click", () => { clearInput(); $("tryit-example").value = ""; changed(); });
    const brush = $("tryit-brush");
    const showBrush = () => {
      $("tryit-brush-value").textContent = say("brush", { size: brush.value });
      brush.setAttribute("aria-valuetext", say("brush_spoken", { size: brush.value }));
    };
    brush.addEventListener("input", showBrush);
    showBrush();
    const select = $("tryit-example");
    examples.images.forEach((_, i) => {
      const option = document.createElement("option");
      option.value = String(i);
      option.textContent = say("test_image", { number: i + 1, name: className(examples.shows[i]) });
      select.appendChild(option);
    });
    select.addEventListener("change", () => { if (select.value !== "") { setRGB(examples.images[Number(select.value)], examples.image_size); changed(); } });
    $("tryit-file").addEventListener("change", async (e) => {
      const file = e.target.files[0];
      if (!file) return;
      try {
        squeeze(await createImageBitmap(file));
        select.value = "";
        changed();
      } catch (err) {
        show(say("bad_picture", { file: file.name, error: err.message }), true);
      }
    });
  }

  // The model the page runs from now on: the input is squeezed to its size, the views rebuilt for its layers
  // and heads, and it runs once. Waits for a run in flight to finish first.
  async function use(model) {
    while (running) await new Promise((resolve) => setTimeout(resolve, 5));
    const previous = pixels && meta ? imageCanvas() : null, before = meta ? size().join("×") : "";
    meta = model.meta;
    session = model.session;
    api.model = { name: model.name, bytes: model.bytes, load_ms: model.load_ms, ...model.meta };
    const [h, w] = size();
    cursor = [Math.floor(w / 2), Math.floor(h / 2)];
    if (!previous) clearInput();
    else if (size().join("×") !== before) squeeze(previous);  // the drawing, at the new model's size
    buildAttentionGrid(meta.num_layers, meta.num_heads);
    $("tryit-attention-title").textContent = say(meta.num_prefix_tokens ? "title_cls" : "title_mean");
    $("tryit-canvas").setAttribute("aria-label", say("canvas_label", {
      height: h, width: w, rows: h / meta.patch_size, columns: w / meta.patch_size }));
    $("tryit-model-name").textContent = model.name;
    $("tryit-model-facts").textContent = facts(model);
    $("tryit-model-shipped").disabled = model.name === SHIPPED;
    changed();
  }

  function facts(model) {  // a model's shape and file, as the page measured it
    const m = model.meta;
    return say("model_facts", {
      classes: m.classes.length, height: m.image_size[0], width: m.image_size[1], patch: m.patch_size,
      layers: m.num_layers, heads: m.num_heads, pooling: m.pooling === "mean" ? say("pool_mean") : say("pool_cls"),
      size: (model.bytes / 1e6).toFixed(2), load: model.load_ms.toFixed(0) });
  }

  // A second model beside the first, on the same drawing (null: compare no more).
  async function compareWith(model) {
    while (running) await new Promise((resolve) => setTimeout(resolve, 5));
    second = model;
    api.second_model = model ? { name: model.name, bytes: model.bytes, load_ms: model.load_ms, ...model.meta } : null;
    $("tryit-second").hidden = !model;
    $("tryit-compare-stop").disabled = !model;
    if (model) {
      $("tryit-b-name").textContent = model.name;
      $("tryit-b-facts").textContent = facts(model);
    }
    changed();
  }

  async function openFile(file, compare = false) {
    const message = $("tryit-model-status");
    message.textContent = say("model_loading", { file: file.name });
    try {
      const model = await openModel(new Uint8Array(await file.arrayBuffer()), file.name);
      if (compare) await compareWith(model); else await use(model);
      message.textContent = say(compare ? "model_compared" : "model_opened", { file: file.name });
      api.refused = null;
    } catch (err) {
      message.textContent = say("model_refused", { file: file.name, error: err.message, name: $("tryit-model-name").textContent });
      api.refused = err.message;
    }
  }

  function wireModelControls(shipped) {
    const picker = $("tryit-model-file"), other = $("tryit-compare-file");
    picker.addEventListener("change", () => { if (picker.files[0]) openFile(picker.files[0]); picker.value = ""; });
    other.addEventListener("change", () => { if (other.files[0]) openFile(other.files[0], true); other.value = ""; });
    $("tryit-compare-stop").addEventListener("click", () => compareWith(null));
    $("tryit-model-shipped").addEventListener("click", () => {
      use(shipped);
      $("tryit-model-status").textContent = say("model_opened", { file: SHIPPED });
    });
    // A file dropped anywhere on the page's panel opens it too; nothing leaves the browser.
    root.addEventListener("dragover", (e) => { e.preventDefault(); root.classList.add("tryit-dragging"); });
    root.addEventListener("dragleave", () => root.classList.remove("tryit-dragging"));
    root.addEventListener("drop", (e) => {
      e.preventDefault();
      root.classList.remove("tryit-dragging");
      if (e.dataTransfer.files[0]) openFile(e.dataTransfer.files[0]);
    });
  }

  // ---- what the page fetches ----------------------------------------------------------------------------
  // Compressed by the Makefile, since a static host may compress nothing: ONNX Runtime's WebAssembly (14.8 MB) as
  // xz (2.3 MB), unpacked as it arrives by xz-decompress (a 20 kB decoder, itself WebAssembly); the model and the
  // test images as gzip, unpacked by the browser's own DecompressionStream.
  const RUNTIME = "ort/ort-wasm-simd-threaded.wasm.xz";
  class Unpacking extends Error {}  // a file could not be fetched or unpacked: the page says which, and why

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.onload = resolve;
      script.onerror = () => reject(new Error(`${src} did not load`));
      document.head.append(script);
    });
  }

  async function fetchPacked(path) {  // the file at base + path (.xz or .gz), unpacked: a Uint8Array
    try {
      const xz = path.endsWith(".xz");
      const [response] = await Promise.all([fetch(base + path), xz && loadScript(base + "ort/xz-decompress.min.js")]);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      return await readAll(xz ? new window["xz-decompress"].XzReadableStream(response.body) : await gunzip(response));
    } catch (err) {
      throw new Unpacking(say("no_unpack", { file: path.split("/").pop(), error: err.message || String(err) }));
    }
  }

  async function readAll(stream) {  // a stream's bytes in one Uint8Array; a decoder's error thrown as it is
    const chunks = [], reader = stream.getReader();
    for (let got = await reader.read(); !got.done; got = await reader.read()) chunks.push(got.value);
    const all = new Uint8Array(chunks.reduce((n, chunk) => n + chunk.length, 0));
    chunks.reduce((at, chunk) => { all.set(chunk, at); return at + chunk.length; }, 0);
    return all;
  }

  async function gunzip(response) {  // a stream of the unpacked bytes (a host that sent them unpacked: as they are)
    const bytes = new Uint8Array(await response.arrayBuffer());
    const stream = new Blob([bytes]).stream();
    return bytes[0] === 0x1f && bytes[1] === 0x8b ? stream.pipeThrough(new DecompressionStream("gzip")) : stream;
  }

  async function start() {
    try {
      ort.env.wasm.wasmPaths = base + "ort/";  // the loader (.mjs); its WebAssembly is given below
      // One thread: more need SharedArrayBuffer, which a browser gives only to a cross-origin-isolated page (headers
      // a static host may not send); without them ort runs one anyway, warning if asked for more. The model takes ~2 ms.
      ort.env.wasm.numThreads = 1;
      const [wasm, model, images] = await Promise.all(
        [RUNTIME, `tryit/${SHIPPED}.gz`, "tryit/examples.json.gz"].map(fetchPacked));
      ort.env.wasm.wasmBinary = wasm;
      examples = JSON.parse(new TextDecoder().decode(images));
      const shipped = await openModel(model, SHIPPED);
      meta = shipped.meta;
      setRGB(examples.images[0], examples.image_size);
      wireControls();
      wireModelControls(shipped);
      $("tryit-example").value = "0";
      root.querySelectorAll("[disabled]").forEach((el) => { el.disabled = false; });
      $("tryit-compare-stop").disabled = true;  // nothing to stop yet
      await use(shipped);
    } catch (err) {
      show(err instanceof Unpacking ? err.message : say("no_start", { error: err.message }), true);
      throw err;
    }
  }

  api.ready = start();
})();
