// "Try it": the book's trained ViT in the page, with ONNX Runtime Web (WebAssembly). No kernel, no network.
// The model file and the example images are written by `make book` (python -m vit_edu.book.export) next to this
// script. Every change of the input runs the model once and redraws every view from its outputs.
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

  let meta = null;        // classes, image size, patch size, example images (examples.json)
  let session = null;     // the ONNX Runtime session
  let pixels = null;      // the input: RGBA bytes of an H×W image
  let cursor = [0, 0];    // the keyboard brush position (x, y)
  let changedAt = null, running = false, dirty = false;
  const api = { runs: 0, last: null, ready: null };  // for the book's browser test and benchmark
  Object.defineProperty(api, "busy", { get: () => running || dirty || changedAt !== null });
  window.vitTryIt = api;

  // ---- input -------------------------------------------------------------------------------------------
  function size() { return meta.image_size; }  // [H, W]

  function clearInput() {
    const [h, w] = size();
    pixels = new Uint8ClampedArray(h * w * 4);
    for (let i = 0; i < h * w; i++) pixels.set([...BACKGROUND, 255], 4 * i);
  }

  function setRGB(rgb) {  // rgb: H*W*3 bytes, row-major
    const [h, w] = size();
    for (let i = 0; i < h * w; i++) pixels.set([rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2], 255], 4 * i);
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

  function inputTensor() {  // (1, 3, H, W) floats in [0, 1]
    const [h, w] = size();
    const data = new Float32Array(3 * h * w);
    for (let c = 0; c < 3; c++) for (let i = 0; i < h * w; i++) data[c * h * w + i] = pixels[4 * i + c] / 255;
    return new ort.Tensor("float32", data, [1, 3, h, w]);
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
    views.ms = performance.now() - start;  // from the input change to every view redrawn
    views.model_ms = modelMs;              // of which the model itself
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
  function imageCanvas() {  // the input as a canvas of H×W pixels
    const [h, w] = size();
    const c = document.createElement("canvas");
    c.width = w; c.height = h;
    c.getContext("2d").putImageData(new ImageData(pixels, w, h), 0, 0);
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
  function heatmap(canvas, weights) {
    const [h, w] = size();
    const p = meta.patch_size, gw = w / p, gh = h / p;
    const ctx = canvas.getContext("2d");
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(imageCanvas(), 0, 0, canvas.width, canvas.height);
    ctx.fillStyle = "rgba(0, 0, 0, 0.45)";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    const top = Math.max(...weights);
    const cw = canvas.width / gw, ch = canvas.height / gh;
    weights.forEach((v, i) => {
      ctx.fillStyle = `rgba(255, 140, 0, ${(0.9 * v / top).toFixed(3)})`;
      ctx.fillRect((i % gw) * cw, Math.floor(i / gw) * ch, cw, ch);
    });
  }

  function describe(weights) {  // where the map puts most weight, for screen readers and the caption
    const gw = size()[1] / meta.patch_size;
    const i = weights.indexOf(Math.max(...weights));
    return say("most_weight", { row: Math.floor(i / gw) + 1, column: (i % gw) + 1, percent: (100 * weights[i]).toFixed(0) });
  }

  function clsRow(views, l, hh) {  // the CLS query's weights on the patch tokens
    const { heads, S } = views, n = meta.num_prefix_tokens;
    const off = ((l * heads + hh) * S) * S;  // row 0: the CLS token
    return views.attentions.slice(off + n, off + S);
  }

  function drawOutputs(views) {
    const classes = meta.classes.map(className);
    const best = views.probabilities.indexOf(Math.max(...views.probabilities));
    $("tryit-probs").innerHTML = classes.map((name, i) => {
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
    $("tryit-lens").innerHTML = rows + "</tbody>";
    const grid = $("tryit-attention");
    for (let l = 0; l < views.L; l++) for (let hh = 0; hh < views.heads; hh++) {
      const weights = clsRow(views, l, hh);
      const figure = grid.querySelector(`[data-map="${l}-${hh}"]`);
      heatmap(figure.querySelector("canvas"), weights);
      figure.querySelector("canvas").setAttribute("aria-label", say("map_label", { layer: l + 1, head: hh, where: describe(weights) }));
    }
    const S = views.S, n = meta.num_prefix_tokens;
    const roll = views.rollout.slice(n, S);  // row 0 of the rollout: what reaches the CLS token
    const total = roll.reduce((a, b) => a + b, 0);
    const share = roll.map((v) => v / total);
    const canvas = $("tryit-rollout-canvas");
    heatmap(canvas, share);
    const text = say("rollout", { where: describe(share) });
    canvas.setAttribute("aria-label", text);
    $("tryit-rollout-caption").textContent = text;
    status.textContent = say("prediction", { name: classes[best], percent: (100 * views.probabilities[best]).toFixed(1) });
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
    meta.images.forEach((_, i) => {
      const option = document.createElement("option");
      option.value = String(i);
      option.textContent = say("test_image", { number: i + 1, name: className(meta.classes[meta.labels[i]]) });
      select.appendChild(option);
    });
    select.addEventListener("change", () => { if (select.value !== "") { setRGB(meta.images[Number(select.value)]); changed(); } });
    $("tryit-file").addEventListener("change", async (e) => {
      const file = e.target.files[0];
      if (!file) return;
      try {
        const bitmap = await createImageBitmap(file);
        const [h, w] = size();
        const c = document.createElement("canvas");
        c.width = w; c.height = h;
        const ctx = c.getContext("2d");
        ctx.imageSmoothingQuality = "high";
        ctx.drawImage(bitmap, 0, 0, w, h);  // squeezed to H×W, as the model reads it
        pixels = ctx.getImageData(0, 0, w, h).data;
        select.value = "";
        changed();
      } catch (err) {
        status.textContent = say("bad_picture", { file: file.name, error: err.message });
      }
    });
  }

  async function start() {
    try {
      ort.env.wasm.wasmPaths = base + "ort/";
      ort.env.wasm.numThreads = 1;  // threads need cross-origin isolation, which a static site does not have
      const [response, created] = await Promise.all([
        fetch(base + "tryit/examples.json"),
        ort.InferenceSession.create(base + "tryit/shapes_vit.onnx", { executionProviders: ["wasm"] }),
      ]);
      meta = await response.json();
      session = created;
      const [h, w] = size();
      cursor = [Math.floor(w / 2), Math.floor(h / 2)];
      clearInput();
      setRGB(meta.images[0]);
      wireControls();
      $("tryit-example").value = "0";
      root.querySelectorAll("[disabled]").forEach((el) => { el.disabled = false; });
      drawInput();
      changedAt = performance.now();
      // One run tells the number of layers and heads; build the grid from it, then draw.
      const probe = await session.run({ images: inputTensor() });
      buildAttentionGrid(probe.attentions.dims[0], probe.attentions.dims[2]);
      await run();
    } catch (err) {
      status.textContent = say("no_start", { error: err.message });
      throw err;
    }
  }

  api.ready = start();
})();
