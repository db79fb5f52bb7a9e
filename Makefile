# The book's commands. Each works from a fresh clone; .venv is reused while requirements.txt is unchanged.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Same thread count everywhere, so executed outputs and nbval agree. (Kernels keep the inline plot backend.)
export OMP_NUM_THREADS := 2
export PYTHONHASHSEED := 0
NOTEBOOKS := $(shell find book -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' -not -path 'book/homework/student/*' -not -path 'book/homework/instructor/*' | sort)
# Homework: otter-assign masters (with solutions) and their hidden checks -> student notebooks + autograder zips.
HOMEWORK := $(sort $(wildcard book/homework/hw*.ipynb) $(wildcard book/homework/hidden/*))
HOMEWORK_BUILT := _build/homework/.built
SUBMISSIONS ?=
# make book REPOSITORY_URL=https://github.com/OWNER/REPO: launch buttons for that repository (default: _config.yml's).
REPOSITORY_URL ?=
GRADES ?= _build/homework/grades.csv
# MathJax's loader, its fonts and the TeX extensions it loads on demand (\\boldsymbol, ...), served locally.
MATHJAX := book/_static/mathjax/.copied
ORT := book/_static/ort/.copied
TRYIT := book/_static/tryit/shapes_vit.onnx.gz

# LANG=en or LANG=zh on the command line: one edition only (make book LANG=zh, make lab LANG=zh). The shell's own
# LANG (a locale) is left alone.
ifeq ($(origin LANG),command line)
EDITION := $(LANG)
override LANG := C.UTF-8
else
EDITION := all
endif
ifeq ($(filter $(EDITION),all en zh),)
$(error LANG=$(EDITION): the editions are LANG=en and LANG=zh (or no LANG for both))
endif
# The Chinese edition: sources written from the English pages and the catalogues in locale/, built as a second book
# into _build/html/zh; the CJK font is cut from Noto Sans CJK (Debian's fonts-noto-cjk, or CJK_FONT=any .otf/.ttc).
ZH_SRC := _build/zh
NOTO := _build/fonts/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc
CJK_FONT ?= $(firstword $(wildcard /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc) $(NOTO))

.PHONY: book test site-checks unit nbval nbval-portable bench-tryit bench-site build browser lab serve execute checkpoints clean homework homework-public grade book-instructor test-homework bench-grade

# The kernel under the name the chapters record ("Python 3"), so that Jupyter does not mark a chapter modified.
KERNELSPEC = $(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" > /dev/null

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@# The pinned versions, and vit_edu itself as an editable install with every extra (importable from any folder).
	$(PY) -m pip install --quiet -r requirements.txt -e ".[dev]"
	@# Optional IRI checker pulled in by jupyter-events: nothing needs it, and importing it costs ~2.6 s in
	@# every process that validates a notebook (each kernel using glue, nbconvert, nbval).
	$(PY) -m pip uninstall --quiet --yes rfc3987-syntax
	$(KERNELSPEC)
	touch $(STAMP)

$(MATHJAX): $(STAMP)
	src="$$($(PY) -c 'import mathjax, pathlib; print(pathlib.Path(mathjax.__file__).parent / "static/mathjax/es5")')"; \
	mkdir -p book/_static/mathjax/output/chtml book/_static/mathjax/input/tex; \
	cp -r "$$src/output/chtml/fonts" book/_static/mathjax/output/chtml/; \
	cp -r "$$src/input/tex/extensions" book/_static/mathjax/input/tex/; \
	cp "$$src/tex-chtml.js" book/_static/mathjax/; \
	touch $(MATHJAX)

# onnxruntime-web for the "Try it" page, from the committed package-lock.json; its WebAssembly runtime is served
# by the site itself, like MathJax, xz-compressed (14.8 MB -> 2.3 MB: a static host may compress nothing) and
# unpacked in the page by xz-decompress (tryit.js). The raw .wasm is not shipped.
$(ORT): package-lock.json | $(STAMP)
	@command -v npm > /dev/null || { echo "make book needs Node.js and npm for the Try-it page (onnxruntime-web):"; \
	  echo "  Debian/Ubuntu: apt-get install -y nodejs npm; macOS: brew install node; Windows: nodejs.org"; exit 1; }
	npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	rm -rf book/_static/ort && mkdir -p book/_static/ort
	cp $(addprefix node_modules/onnxruntime-web/dist/,ort.wasm.min.js ort-wasm-simd-threaded.mjs) \
	  node_modules/xz-decompress/dist/package/xz-decompress.min.js book/_static/ort/
	$(PY) -c "import lzma, pathlib; wasm = pathlib.Path('node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.wasm'); \
	  pathlib.Path('book/_static/ort', wasm.name + '.xz').write_bytes(lzma.compress(wasm.read_bytes(), check=lzma.CHECK_CRC32, \
	  preset=9 | lzma.PRESET_EXTREME))"
	touch $@

# The Try-it page's model (ONNX, exported from the shipped checkpoint) and test images, which the page fetches
# gzip-compressed (a static host may compress nothing); the browser test's reference outputs from PyTorch go next to
# the build, not into the site.
$(TRYIT): $(STAMP) vit_edu/book/export.py vit_edu/model.py vit_edu/checkpoints/shapes_vit.pt
	$(PY) -m vit_edu.book.export --out $(basename $@) --examples book/_static/tryit/examples.json --reference _build/tryit_reference.json
	gzip -9 -n -k -f $(basename $@) book/_static/tryit/examples.json

# Noto Sans CJK from Debian's package, unpacked here (not installed: the browser tests need a system without it).
$(NOTO):
	@command -v apt-get > /dev/null || { echo "No apt-get: give a CJK font with CJK_FONT=path (see the README)"; exit 0; }
	mkdir -p _build/fonts && cd _build/fonts && apt-get download fonts-noto-cjk 2> /dev/null && \
	  dpkg-deb -x fonts-noto-cjk_*.deb . && rm fonts-noto-cjk_*.deb || echo "Could not download fonts-noto-cjk."

build: $(STAMP) $(MATHJAX) $(ORT) $(TRYIT) $(HOMEWORK_BUILT) $(if $(filter $(NOTO),$(CJK_FONT)),$(NOTO))
	@# The notebooks' set-up cells install from the configured repository (a no-op while it is unchanged).
	BOOK_REPOSITORY_URL="$(REPOSITORY_URL)" $(PY) -m vit_edu.book.launch
	@# --all: Sphinx copies static files (MathJax, CSS) only when it writes pages; write them all every time.
ifneq ($(EDITION),zh)
	BOOK_REPOSITORY_URL="$(REPOSITORY_URL)" $(VENV)/bin/jupyter-book build . --all --warningiserror --keep-going
endif
ifneq ($(EDITION),en)
	$(PY) -m vit_edu.book.zh_edition $(ZH_SRC)
	BOOK_REPOSITORY_URL="$(REPOSITORY_URL)" $(VENV)/bin/jupyter-book build $(ZH_SRC) --all --warningiserror --keep-going
	rm -rf _build/html/zh && mkdir -p _build/html && mv $(ZH_SRC)/_build/html _build/html/zh
endif
	@if [ -f "$(CJK_FONT)" ]; then $(PY) -m vit_edu.book.cjk_font --font "$(CJK_FONT)" --site _build/html; \
	else echo "No CJK font: Chinese shows only where the reader's system has a font for it. Give one with"; \
	  echo "CJK_FONT=path/to/NotoSansSC-Regular.otf (or, on Debian/Ubuntu: apt-get install fonts-noto-cjk)."; fi
	@# The players' frames as files both editions share, fetched when first shown (the notebooks keep them inline).
	$(PY) -m vit_edu.book.site_frames --site _build/html

book: build
	@echo "The site is in $(CURDIR)/_build/html: open _build/html/index.html, or run 'make serve'."

unit: $(STAMP)
	$(PY) -m pytest tests --ignore-glob='tests/test_site*.py' -q -p no:cacheprovider --timeout=600

NBVAL = $(PY) -m pytest --nbval $(NOTEBOOKS) --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=180 -p no:cacheprovider -q

nbval: $(STAMP)
	$(NBVAL)

# The same check with torch's vector kernels and MKL forced to the plainest instruction set, as another CPU would
# choose them: committed outputs must be what any reader's machine gives. (Also: ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2.)
nbval-portable: $(STAMP)
	ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE $(NBVAL)

browser: $(STAMP)
	$(PY) -m pytest tests/test_site.py tests/test_site_launch_buttons.py tests/test_site_tryit.py -q -p no:cacheprovider --timeout=600

# Two lanes at once, since most of each is one process waiting on another (a kernel, a sandbox, Sphinx, Chromium):
# the unit tests, and the notebooks' checks followed by the site and its browser tests. OpenMP's idle threads sleep
# instead of spinning, so that the lanes' torch threads do not burn the cores the other lane needs.
test: $(STAMP)
	OMP_WAIT_POLICY=PASSIVE $(MAKE) --no-print-directory -j2 --output-sync=line unit site-checks

site-checks: $(STAMP)
	$(MAKE) --no-print-directory nbval
	$(MAKE) --no-print-directory nbval-portable
	$(MAKE) --no-print-directory build
	$(MAKE) --no-print-directory browser

# The Try-it page's update latency in headless Chromium and the bytes it adds (a benchmark, not a test).
bench-tryit: build
	$(PY) tests/bench_tryit.py

# Bytes each page type transfers on load (home, chapters, glossary, Try-it, search), both editions, by kind; the
# largest files and what every page loads (a benchmark; BENCH_SITE=dir measures another built site).
BENCH_SITE ?= _build/html
bench-site: build
	$(PY) tests/bench_site.py --site $(BENCH_SITE)

# Jupyter Lab on the Lab edition of the chapters: MyST rendered by jupyterlab-myst, glued numbers written in; saves keep
# each widget cell's precomputed player. FRESH=05_qkv (or all): the book's version of a chapter you edited, yours kept beside it.
FRESH ?=
# The Chinese Lab carries the CJK font make book uses (CJK_FONT), cut to its characters.
lab: $(STAMP) $(if $(filter zh,$(EDITION)),$(HOMEWORK_BUILT) $(if $(filter $(NOTO),$(CJK_FONT)),$(NOTO)))
	@# Also for a .venv installed before the kernel's name was set (a fraction of a second).
	@$(KERNELSPEC)
ifeq ($(EDITION),zh)
	$(PY) -m vit_edu.book.zh_edition $(ZH_SRC)
	$(PY) -m vit_edu.book.lab_edition _build/lab-zh --book $(ZH_SRC)/book --start $(if $(FRESH),--fresh $(FRESH)) \
	  $(if $(wildcard $(CJK_FONT)),--cjk-font "$(CJK_FONT)")
else
	$(PY) -m vit_edu.book.lab_edition _build/lab --start $(if $(FRESH),--fresh $(FRESH))
endif

serve: build
	$(PY) -m http.server 8000 --bind 127.0.0.1 --directory _build/html

execute: $(STAMP)
	for nb in $(NOTEBOOKS); do \
	  $(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.timeout=120 --ExecutePreprocessor.store_widget_state=False "$$nb" || exit 1; \
	done

# The shipped training results the chapters load (over an hour on one core; each result file records its
# seconds). The training scripts run on one thread, so the same seed gives the same weights however busy the
# machine is (on the same kind of CPU: another CPU's vector kernels round differently, and long runs amplify it);
# the benchmark uses the two threads it reports on and wants a quiet machine.
checkpoints: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training --config shapes-vit --seed 0 --out vit_edu/checkpoints/shapes_vit.pt
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.pos_embed_ablation --seeds 0 1 2 3 4 --out vit_edu/checkpoints/pos_embed_ablation.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.positions_matter --seeds 0 1 2 --out vit_edu/checkpoints/positions_matter.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.norm_placement --seeds 0 1 2 --out vit_edu/checkpoints/norm_placement.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.mlp_ratio --seeds 0 1 2 --out vit_edu/checkpoints/mlp_ratio.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.regularisation --seeds 0 1 2 --out vit_edu/checkpoints/regularisation.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.regularisation --seeds 0 1 2 --train-size 20000 \
	  --arms none "crop + flip" "DropPath 0.1" --out vit_edu/checkpoints/regularisation_20000.json
	$(PY) -m vit_edu.training.bench --seeds 0 1 2 --out vit_edu/checkpoints/vit_vs_cnn.json
	@# After shapes_vit.pt and vit_vs_cnn.json: seed 0's ViT is the checkpoint; each CNN gets the benchmark's steps
	@# (here and in data_size and recipe).
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.priors --seeds 0 1 2 --out vit_edu/checkpoints/vit_vs_cnn_priors.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.data_size --seeds 0 1 2 --out vit_edu/checkpoints/data_size.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.token_count --seeds 0 1 2 --out vit_edu/checkpoints/token_count.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.recipe --seeds 0 1 2 --out vit_edu/checkpoints/recipe.json
	@# After shapes_vit.pt: fine-tuning starts from it, and the ablation's seed 0 is it.
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.finetune --seeds 0 1 2 --out vit_edu/checkpoints/finetune.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.patch_size --seeds 0 1 2 --out vit_edu/checkpoints/patch_size.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.frozen_embedding --seeds 0 1 2 --out vit_edu/checkpoints/frozen_embedding.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.init_schemes --seeds 0 1 2 3 4 --out vit_edu/checkpoints/init_schemes.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.training.spurious --seeds 0 1 2 --out vit_edu/checkpoints/spurious_cue.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.explain.ablation --seeds 0 1 2 --out vit_edu/checkpoints/block_ablation.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.variants.attention_cost --out vit_edu/checkpoints/attention_cost.json
	@# Chapter 15 pairs the α = 0.5 student with reruns of the hard and α = 0.1 students made in the same, later run
	@# (the shipped file's later run was on another CPU, and chapter 15 says how far its reruns moved).
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.variants.data_efficiency --seeds 0 1 2 --out vit_edu/checkpoints/data_efficiency.json \
	  --models "ViT" "two heads, no teacher" "ViT on pseudo-labels" "distilled (hard)" "distilled (soft)"
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.variants.data_efficiency --seeds 0 1 2 --out vit_edu/checkpoints/data_efficiency.json \
	  --add-to vit_edu/checkpoints/data_efficiency.json --models "distilled (hard)" "distilled (soft)" "distilled (soft, α = 0.5)"
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.variants.distill_bench --seeds 0 1 2 --out vit_edu/checkpoints/distill_bench.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.variants.mae_pretrain --seeds 0 1 2 --out vit_edu/checkpoints/mae_probe.json \
	  --checkpoint vit_edu/checkpoints/shapes_mae.pt
	@# DINO after shapes_vit.pt and shapes_mae.pt: seed 0's supervised ViT and MAE are those checkpoints.
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.variants.dino_train --seeds 0 1 2 --out vit_edu/checkpoints/dino_shapes.json \
	  --checkpoint vit_edu/checkpoints/dino_shapes.pt
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.variants.clip_train --seeds 0 1 2 --out vit_edu/checkpoints/tiny_clip.json \
	  --model vit_edu/checkpoints/tiny_clip.pt
	@# Part V. Segmentation: one run of patches of 4 with the progressive head costs three of the others, so the main
	@# run trains it on seed 0 only (the widget's model) and a second run adds seeds 1 and 2.
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.tasks.segmentation_train --seeds 0 1 2 --out vit_edu/checkpoints/segmentation.json \
	  --weights vit_edu/checkpoints/segmentation.pt
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.tasks.segmentation_train --seeds 1 2 --arms "P4 pup" --first-seed-only \
	  --out vit_edu/checkpoints/segmentation_p4_pup.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.tasks.detection_train --arms detr fixed --seeds 0 1 2 \
	  --out vit_edu/checkpoints/detection_matching.json --checkpoint-dir vit_edu/checkpoints
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.tasks.detection_train --arms yolos --seeds 0 1 2 \
	  --out vit_edu/checkpoints/detection_yolos.json --checkpoint-dir vit_edu/checkpoints
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.tasks.detection_train --arms yolos-2 yolos-3 --seeds 0 1 2 \
	  --out vit_edu/checkpoints/detection_yolos_macs.json
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.tasks.video_train --seeds 0 1 2 --out vit_edu/checkpoints/video.json \
	  --model vit_edu/checkpoints/video.pt
	OMP_NUM_THREADS=1 $(PY) -m vit_edu.tasks.video_cost --out vit_edu/checkpoints/video_cost.json

# Student notebooks (no solutions, no hidden checks) for the site and for students, and the masters without
# hidden checks for the instructor's site. No secret needed: nothing here holds a hidden input.
$(HOMEWORK_BUILT): $(STAMP) $(HOMEWORK) $(wildcard vit_edu/homework/*.py vit_edu/homework/public/*.json)
	rm -rf _build/homework book/homework/student book/homework/instructor
	$(PY) -m vit_edu.homework.build book/homework _build/homework
	mkdir -p book/homework/student book/homework/instructor
	cp _build/homework/student/*.ipynb book/homework/student/
	cp _build/homework/masters/*.ipynb book/homework/instructor/
	touch $@

# The course's secret: every hidden input is drawn from it, so the repository alone tells nobody a hidden input.
# Keep it outside the repository: make homework HOMEWORK_SECRET_FILE=~/course.secret (or HOMEWORK_SECRET=...).
HOMEWORK_SECRET ?=
HOMEWORK_SECRET_FILE ?=
GRADING := _build/grading
define need_secret
@test -n "$(HOMEWORK_SECRET)$(HOMEWORK_SECRET_FILE)" || { echo "$(1) needs the course's secret, from which every \
hidden input is drawn: HOMEWORK_SECRET_FILE=path (kept outside the repository) or HOMEWORK_SECRET=..."; exit 2; }
endef

# make homework [HOMEWORK_SECRET_FILE=...]: the student notebooks; with the secret, also the Gradescope zips in
# _build/grading/autograder (private: they hold the solutions and the secret).
homework: $(HOMEWORK_BUILT)
	@if [ -n "$(HOMEWORK_SECRET)$(HOMEWORK_SECRET_FILE)" ]; then \
	  HOMEWORK_SECRET="$(HOMEWORK_SECRET)" $(PY) -m vit_edu.homework.build book/homework $(GRADING) \
	    $(if $(HOMEWORK_SECRET_FILE),--secret-file "$(HOMEWORK_SECRET_FILE)"); fi
	@echo "Student notebooks: _build/homework/student; Gradescope zips (with the secret): $(GRADING)/autograder"

# The public examples shipped with the package (vit_edu/homework/public/*.json), from the instructor's modules.
homework-public: $(STAMP)
	$(PY) -m vit_edu.homework.build book/homework --public

# make grade SUBMISSIONS=folder HOMEWORK_SECRET_FILE=... [GRADES=file.csv] [JOBS=2]: one CSV row, one feedback
# file and one executed notebook per notebook, each question graded in a sandbox of its own, hidden inputs drawn
# per student from the secret; the folder is never modified. Exit status 1 when the grader failed on a row.
JOBS ?= 1
grade: $(HOMEWORK_BUILT)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=folder-of-notebooks HOMEWORK_SECRET_FILE=path \
	[GRADES=grades.csv] [JOBS=2]"; exit 2; }
	$(call need_secret,make grade)
	@HOMEWORK_SECRET="$(HOMEWORK_SECRET)" $(PY) -m vit_edu.homework.grade "$(SUBMISSIONS)" --homework-dir _build/homework \
	  --out "$(GRADES)" --jobs $(JOBS) $(if $(HOMEWORK_SECRET_FILE),--secret-file "$(HOMEWORK_SECRET_FILE)")

# The site with the homework masters (solutions, hidden tests) in place of the student pages.
book-instructor: $(STAMP) $(MATHJAX) $(ORT) $(TRYIT) $(HOMEWORK_BUILT)
	sed 's#book/homework/student/#book/homework/instructor/#' _toc.yml > _build/homework/instructor_toc.yml
	$(VENV)/bin/jupyter-book build . --toc _build/homework/instructor_toc.yml --path-output _build/instructor \
	  --all --warningiserror --keep-going
	@echo "The instructor site is in $(CURDIR)/_build/instructor/_build/html"

# The homework tests alone (they are also part of make unit / make test).
test-homework: $(STAMP)
	$(PY) -m pytest tests/test_homework.py tests/test_gradescope.py tests/test_sandbox.py tests/test_copies.py \
	  tests/test_plain.py tests/test_checks.py tests/test_strip.py tests/test_feedback_*.py tests/test_grade_commands.py -q -p no:cacheprovider --timeout=900

# Grading throughput (--jobs 1 and 2), the cost of the per-question processes, peak memory (a benchmark).
bench-grade: $(STAMP)
	$(PY) tests/bench_grade.py

clean:
	rm -rf _build book/_static/mathjax book/_static/ort book/_static/tryit/*.onnx book/_static/tryit/*.json book/_static/tryit/*.gz book/homework/student \
	  book/homework/instructor node_modules
