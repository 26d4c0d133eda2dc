/* Live re-ranking of the leaderboard while its weight sliders move (progressive enhancement: without
 * this script the form's Update button asks the server, which renders the same table).
 *
 * computeDynascore is leaderboards/dynascore.py's compute_dynascore, step for step and in the same
 * order of floating-point operations (so both give the same numbers, not merely close ones): x and x'
 * (steps 1-2), AMRS over neighbours sorted by perf (or the reference metric standing in for it) with the noise guard (step 3: the fixed resolutions
 * and the models' measured spreads, from each model's "spreads" in the data block), normalised metric
 * weights (step 4), the weighted sum (step 5), ranks with shared ties. leaderboardRows adds what
 * selectors.build_leaderboard adds (an unmeasurable metric is no missing score) and sortRows is
 * selectors.sort_rows. Formula: docs/domain.md, "Dynascore" (Ma et al. 2021, "Dynaboard").
 * tests/leaderboards/test_pages_live_ranking_js.py runs this file under Node against the Python code.
 *
 * The data (scores per model, dataset and metric) comes from the page's JSON block #leaderboard-data
 * (leaderboards/live_ranking.py). The URL keeps the weights with the query parameters the server reads
 * (w_<metric>, d_<dataset id>, round, sort, dir), so a reload or a shared link shows the same ranking.
 */
(function () {
  "use strict";

  var PERF = "perf";
  var MEMORY = "memory";
  var PERCENT_METRICS = { perf: true, fairness: true, robustness: true };
  var SETTLE_MS = 250;

  /* Python's fixed-point formatting ("%.nf", round(x, n)): the exact binary value rounded half to
   * even. toFixed rounds the exact value too but sends exact ties up, so ties are settled here. */
  function pyFixed(x, n) {
    var s = x.toFixed(n);
    var exact = Math.abs(x).toFixed(100);
    var point = exact.indexOf(".");
    var rest = exact.slice(point + 1 + n);
    if (rest.charAt(0) === "5" && /^50*$/.test(rest)) {
      var down = exact.slice(0, point + 1 + n);
      if (n === 0) down = exact.slice(0, point);
      var last = down.charAt(down.length - 1);
      if (parseInt(last, 10) % 2 === 0) {
        s = (x < 0 ? "-" : "") + down;
        if (s.charAt(s.length - 1) === ".") s = s.slice(0, -1);
      }
    }
    return s;
  }

  function pyRound(x, n) {
    return Number(pyFixed(x, n));
  }

  /* Python's "%.4g" (precision significant digits, exponent outside [-4, precision)). */
  function pyG(x, precision) {
    if (x === 0) return "0";
    if (!isFinite(x)) return String(x);
    var e = Number(x.toExponential(precision - 1).split("e")[1]);
    var text;
    if (e < -4 || e >= precision) {
      var parts = x.toExponential(precision - 1).split("e");
      var mantissa = parts[0].indexOf(".") >= 0 ? parts[0].replace(/0+$/, "").replace(/\.$/, "") : parts[0];
      var exp = Number(parts[1]);
      text = mantissa + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
    } else {
      text = pyFixed(x, Math.max(precision - 1 - e, 0));
      if (text.indexOf(".") >= 0) text = text.replace(/0+$/, "").replace(/\.$/, "");
    }
    return text;
  }

  function thousands(text) {
    var parts = text.split(".");
    var sign = parts[0].charAt(0) === "-" ? "-" : "";
    var digits = sign ? parts[0].slice(1) : parts[0];
    digits = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return sign + digits + (parts.length > 1 ? "." + parts[1] : "");
  }

  /* leaderboards/tables.py format_metric. */
  function formatMetric(metric, value) {
    if (value === null || value === undefined) return "\u2013";
    if (PERCENT_METRICS[metric]) return pyFixed(value * 100, 1) + "%";
    if (metric === "throughput") return thousands(pyFixed(value, 1));
    if (metric === MEMORY) return pyFixed(value, 2);
    return pyG(value, 4);
  }

  /* tables.spread_text */
  function spreadText(spread, value) {
    if (typeof spread !== "number" || typeof value !== "number" || !(value > 0)) return "";
    return "range " + Math.floor(100 * spread / value + 0.5) + "%";
  }

  function formatAmrs(value) {
    return value === null || value === undefined ? "undefined" : pyG(value, 4);
  }

  function isNumber(v) {
    return typeof v === "number" && isFinite(v);
  }

  function normaliseWeights(pairs, what) {
    var total = 0;
    pairs.forEach(function (p) {
      if (!isNumber(p[1])) throw new Error(what + ": " + p[0] + " is not a finite number");
      if (p[1] < 0) throw new Error(what + ": " + p[0] + " is negative");
    });
    pairs.forEach(function (p) { total += p[1]; });
    if (total <= 0) throw new Error(what + ": all weights are zero");
    return pairs.map(function (p) { return [p[0], p[1] / total]; });
  }

  /* dynascore.Resolution.describe */
  function describeResolution(res, metric) {
    var parts = [];
    if (res.absolute) parts.push(String(res.absolute) + (metric === MEMORY ? " GiB" : ""));
    if (res.relative) parts.push(pyFixed(res.relative * 100, 0) + "% of the value");
    var text = parts.join(" or ") || "exact";
    return res.measured ? "the larger of " + text + " and the measured spread" : text;
  }

  /* dynascore.Resolution.threshold: spreadA, spreadB are the models' aggregated spreads u (metric unit). */
  function resolutionThreshold(res, a, b, spreadA, spreadB) {
    return Math.max(res.absolute || 0, (res.relative || 0) * Math.max(Math.abs(a), Math.abs(b)), spreadA, spreadB);
  }

  /* dynascore._is_spread: a finite number >= 0 (booleans are not numbers here). */
  function isSpread(v) {
    return isNumber(v) && v >= 0;
  }

  /* dynascore.compute_dynascore.
   *   models: [{key, scores: {datasetKey: {metric: value|null}}, spreads: {datasetKey: {metric: relative
   *   spread}} (optional: the measured spreads of the noise guard)}] in input order;
   *   datasetWeights: [[datasetKey, w_d]] in order; metricWeights: {metric: ω_j};
   *   opts: {memoryCeiling, metrics, resolutions, tieTolerance, sortDecimals, resolutionSlack}.
   * Returns {models: [{key, x, raw, dynascore, complete, missing, rank, spread}] best first, amrs, leftOut,
   * metricWeights (normalised), datasetWeights (normalised), pairsUsed, reference}. */
  function computeDynascore(models, datasetWeights, metricWeights, opts) {
    var metrics = opts.metrics.slice();
    if (metrics.indexOf(PERF) < 0) throw new Error("metrics: perf is required (models are sorted by it)");
    var resolutions = opts.resolutions || {};
    var ceiling = opts.memoryCeiling;
    var weightsByMetric = {};
    metrics.forEach(function (j) { weightsByMetric[j] = metricWeights[j] === undefined ? 0 : metricWeights[j]; });
    var omegaPairs = normaliseWeights(metrics.map(function (j) { return [j, weightsByMetric[j]]; }), "metric weights");
    var omega = {};
    omegaPairs.forEach(function (p) { omega[p[0]] = p[1]; });
    var wPairs = normaliseWeights(datasetWeights, "dataset weights");
    var w = {};
    wPairs.forEach(function (p) { w[p[0]] = p[1]; });
    var datasets = wPairs.filter(function (p) { return p[1] > 0; }).map(function (p) { return p[0]; });
    var counted = metrics.filter(function (j) { return omega[j] > 0; });
    var measured = metrics.filter(function (j) { return resolutions[j] && resolutions[j].measured; });

    function get(m, d, j) {
      var per = m.scores[d];
      if (!per) return null;
      var v = per[j];
      return v === undefined ? null : v;
    }

    function spreadOf(m, d, j) {
      var per = (m.spreads || {})[d];
      var r = per ? per[j] : undefined;
      return isSpread(r) ? r : resolutions[j].relative;
    }

    var raw = [], flipped = [], full = [], missing = [], spread = [];
    models.forEach(function (m, i) {
      var rawM = {}, fullM = {}, missingM = [], spreadM = {};
      metrics.forEach(function (j) {
        var total = 0, weightSum = 0, spreadTotal = 0;
        var isMeasured = measured.indexOf(j) >= 0;
        datasets.forEach(function (d) {
          var value = get(m, d, j);
          if (value === null) {
            if (counted.indexOf(j) >= 0) missingM.push([d, j]);
            return;
          }
          total += w[d] * value;
          weightSum += w[d];
          if (isMeasured) spreadTotal += w[d] * (spreadOf(m, d, j) * value);
        });
        var haveAll = weightSum > 0 && datasets.every(function (d) { return get(m, d, j) !== null; });
        rawM[j] = weightSum > 0 ? total / weightSum : null;
        fullM[j] = haveAll;
        if (isMeasured) spreadM[j] = weightSum > 0 ? Math.abs(spreadTotal / weightSum) : null;
      });
      raw[i] = rawM;
      spread[i] = spreadM;
      full[i] = fullM;
      missing[i] = missingM;
      var f = {};
      metrics.forEach(function (j) {
        var v = rawM[j];
        f[j] = v === null ? null : (j === MEMORY ? ceiling - v : v);
      });
      flipped[i] = f;
    });

    /* Step 3 against the reference metric ref (dynascore.py, "Reference metric"). */
    function amrsAgainst(ref) {
      var amrs = {}, leftOut = {}, pairsUsed = {};
      amrs[ref] = 1.0;
      var refRes = resolutions[ref];
      metrics.forEach(function (j) {
        if (j === ref) return;
        var eligible = [];
        models.forEach(function (m, i) { if (full[i][ref] && full[i][j]) eligible.push(i); });
        var keyOf = {};
        eligible.forEach(function (i) { keyOf[i] = pyRound(flipped[i][ref], opts.sortDecimals); });
        eligible.sort(function (a, b) { return keyOf[a] - keyOf[b]; });
        if (eligible.length < 2) {
          amrs[j] = null;
          leftOut[j] = "AMRS undefined: " + eligible.length + (eligible.length === 1 ? " model" : " models") + " with complete " + ref + " and " + j + " values";
          pairsUsed[j] = 0;
          return;
        }
        var maxRef = -Infinity;
        eligible.forEach(function (i) { maxRef = Math.max(maxRef, Math.abs(flipped[i][ref])); });
        var threshold = opts.tieTolerance * maxRef;
        var res = resolutions[j];
        var ratios = [], belowResolution = 0;
        for (var k = 0; k + 1 < eligible.length; k++) {
          var a = eligible[k], b = eligible[k + 1];
          var dRef = Math.abs(flipped[b][ref] - flipped[a][ref]);
          if (dRef <= threshold || (refRes && dRef < resolutionThreshold(refRes, raw[a][ref], raw[b][ref],
              spread[a][ref] || 0.0, spread[b][ref] || 0.0) * (1 - opts.resolutionSlack))) {
            continue;
          }
          var dJ = Math.abs(flipped[b][j] - flipped[a][j]);
          var uA = spread[a][j] || 0.0, uB = spread[b][j] || 0.0;
          if (res && 0 < dJ && dJ < resolutionThreshold(res, raw[a][j], raw[b][j], uA, uB) * (1 - opts.resolutionSlack)) {
            dJ = 0.0;
            belowResolution += 1;
          }
          ratios.push(dJ / dRef);
        }
        pairsUsed[j] = ratios.length;
        if (!ratios.length) {
          amrs[j] = null;
          leftOut[j] = "AMRS undefined: fewer than two models with distinct " + ref;
        } else {
          var sum = 0;
          ratios.forEach(function (r) { sum += r; });
          amrs[j] = sum / ratios.length;
          if (amrs[j] === 0 && belowResolution) {
            leftOut[j] = "AMRS is zero: every difference in " + j + " between neighbours is below its " +
              "measurement resolution (" + describeResolution(res, j) + ")";
          } else if (amrs[j] === 0) {
            leftOut[j] = "AMRS is zero: every model has the same " + j;
          }
        }
      });
      return { amrs: amrs, leftOut: leftOut, pairsUsed: pairsUsed };
    }

    var present = {};
    metrics.forEach(function (j) { present[j] = raw.some(function (r) { return r[j] !== null; }); });
    var reference = PERF;
    var step3 = amrsAgainst(PERF);
    var perfServes = counted.indexOf(PERF) >= 0
      ? present[PERF]
      : counted.every(function (j) { return step3.amrs[j] !== null && step3.amrs[j] !== undefined; }) &&
        counted.some(function (j) { return !(j in step3.leftOut); });
    // The stand-in (dynascore.py): among the counted metrics two models have in full, the heaviest, then
    // the one most models have, then the first.
    var completeCount = {};
    metrics.forEach(function (j) { completeCount[j] = full.filter(function (f) { return f[j]; }).length; });
    var candidates = counted.filter(function (j) { return present[j]; });
    candidates.sort(function (a, b) {
      return ((completeCount[a] < 2) - (completeCount[b] < 2)) || (omega[b] - omega[a]) ||
        (completeCount[b] - completeCount[a]) || (metrics.indexOf(a) - metrics.indexOf(b));
    });
    if (!perfServes && candidates.length) {
      reference = candidates[0];
      step3 = amrsAgainst(reference);
    }
    var amrs = step3.amrs, leftOut = step3.leftOut, pairsUsed = step3.pairsUsed;
    counted.forEach(function (j) {
      if (!present[j]) {
        amrs[j] = null;
        leftOut[j] = "no model has a value";
      }
    });

    var inSum = counted.filter(function (j) { return !(j in leftOut); });
    var results = models.map(function (m, i) {
      var x = flipped[i];
      var score = null;
      if (inSum.length && !inSum.some(function (j) { return x[j] === null; })) {
        score = 0;
        inSum.forEach(function (j) { score += omega[j] * x[j] / amrs[j]; });
      }
      return { key: m.key, x: x, raw: raw[i], dynascore: score, complete: !missing[i].length, missing: missing[i], rank: null, spread: spread[i] };
    });
    var ranked = results.filter(function (r) { return r.dynascore !== null; });
    ranked.sort(function (a, b) { return b.dynascore - a.dynascore; });
    var previous = null, rank = 0;
    ranked.forEach(function (r, index) {
      var position = index + 1;
      if (previous === null || !isClose(r.dynascore, previous)) {
        rank = position;
        previous = r.dynascore;
      }
      r.rank = rank;
    });
    var final = ranked.concat(results.filter(function (r) { return r.dynascore === null; }));
    return { models: final, amrs: amrs, leftOut: leftOut, metricWeights: omega, datasetWeights: w, pairsUsed: pairsUsed, reference: reference };
  }

  /* math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) */
  function isClose(a, b) {
    if (a === b) return true;
    var diff = Math.abs(b - a);
    return diff <= Math.abs(1e-9 * b) || diff <= Math.abs(1e-9 * a) || diff <= 1e-12;
  }

  /* What the server does around compute_dynascore (forms.parse_leaderboard_query's fallbacks for
   * all-zero weights, selectors.build_leaderboard's rows).
   *   data: the #leaderboard-data payload; metricWeights {metric: ω}; datasetWeights {id: w}.
   * Returns {rows: [{model_id, dynascore, rank, complete, missing (names), metrics (raw), x}] by
   * Dynascore rank, amrs, leftOut, pairsUsed, metricWeights (as used), normalised}. */
  function leaderboardRows(data, metricWeights, datasetWeights) {
    var mw = {};
    data.metrics.forEach(function (j) { mw[j] = metricWeights[j] === undefined ? 0 : metricWeights[j]; });
    if (!data.metrics.some(function (j) { return mw[j]; })) {
      data.metrics.forEach(function (j) { mw[j] = data.default_metric_weights[j]; });
      if (!data.metrics.some(function (j) { return mw[j]; })) data.metrics.forEach(function (j) { mw[j] = 1.0; });
    }
    var dw = data.datasets.map(function (d) { return [d, datasetWeights[d] === undefined ? 1.0 : datasetWeights[d]]; });
    if (dw.length && !dw.some(function (p) { return p[1]; })) dw = dw.map(function (p) { return [p[0], 1.0]; });
    var out = { rows: [], amrs: {}, leftOut: {}, pairsUsed: {}, metricWeights: mw, normalised: {} };
    if (!dw.length) return out;
    var result = computeDynascore(
      data.models.map(function (m) { return { key: m.id, scores: m.scores, spreads: m.spreads || {} }; }),
      dw,
      mw,
      {
        memoryCeiling: data.memory_ceiling,
        metrics: data.metrics,
        resolutions: data.resolutions,
        tieTolerance: data.tie_tolerance,
        sortDecimals: data.sort_decimals,
        resolutionSlack: data.resolution_slack,
      }
    );
    var unmeasurable = {}, byId = {};
    data.models.forEach(function (m) { unmeasurable[m.id] = m.not_measurable || {}; byId[m.id] = m; });
    out.amrs = result.amrs;
    out.leftOut = result.leftOut;
    out.pairsUsed = result.pairsUsed;
    out.normalised = result.metricWeights;
    out.rows = result.models.map(function (r) {
      var skip = unmeasurable[r.key];
      var kept = r.missing.filter(function (p) { return !(p[1] in skip); });
      var names = {};
      kept.forEach(function (p) { names[data.dataset_names[p[0]] || String(p[0])] = true; });
      return {
        model_id: r.key,
        dynascore: r.dynascore,
        rank: r.rank,
        complete: !kept.length,
        missing: Object.keys(names).sort(),
        metrics: r.raw,
        spread: shownSpreads(r, byId[r.key]),
        x: r.x,
        not_measurable: skip,
        notes: notes(skip, r, mw, result.leftOut),
      };
    });
    return out;
  }

  /* selectors._shown_spreads: only metrics whose spread every one of the model's Scores measured. */
  function shownSpreads(result, model) {
    var out = {}, datasets = Object.keys((model && model.scores) || {}), spreads = (model && model.spreads) || {};
    Object.keys(result.spread || {}).forEach(function (j) {
      var u = result.spread[j];
      if (u === null || u === undefined || !datasets.length) return;
      if (datasets.every(function (d) { return spreads[d] && j in spreads[d]; })) out[j] = u;
    });
    return out;
  }

  /* selectors._not_measurable_notes */
  function notes(unmeasurable, result, weights, leftOut) {
    var out = [];
    Object.keys(unmeasurable).forEach(function (metric) {
      if (result.x[metric] !== null && result.x[metric] !== undefined) return;
      var reason = unmeasurable[metric];
      var cap = reason.charAt(0).toUpperCase() + reason.slice(1).toLowerCase();
      var counts = (weights[metric] || 0) > 0 && !(metric in leftOut);
      if (counts && result.dynascore === null) {
        out.push(cap + ": no Dynascore while " + metric + " counts; set the " + metric + " weight to 0 to rank it.");
      } else {
        out.push(cap + "; " + metric + " does not count in this view's Dynascore.");
      }
    });
    return out;
  }

  /* selectors.sort_rows; rows need model_id, rank, dynascore, metrics, and for "model" and dataset
   * columns name and datasets (perf per dataset id). */
  function sortRows(rows, column, direction) {
    var desc = direction === "desc";
    function value(row) {
      if (column === "dynascore") return row.dynascore;
      if (column === "model") return row.name.toLowerCase();
      if (/^d\d+$/.test(column)) {
        var v = (row.datasets || {})[column.slice(1)];
        return v === undefined ? null : v;
      }
      var m = row.metrics[column];
      return m === undefined ? null : m;
    }
    var base = rows.slice().sort(function (a, b) {
      var na = a.rank === null ? 1 : 0, nb = b.rank === null ? 1 : 0;
      if (na !== nb) return na - nb;
      if ((a.rank || 0) !== (b.rank || 0)) return (a.rank || 0) - (b.rank || 0);
      return a.model_id - b.model_id;
    });
    var present = base.filter(function (r) { return value(r) !== null; });
    var absent = base.filter(function (r) { return value(r) === null; });
    present.sort(function (a, b) {
      var va = value(a), vb = value(b);
      if (va === vb) return 0;
      var less = va < vb ? -1 : 1;
      return desc ? -less : less;
    });
    return present.concat(absent);
  }

  var api = {
    computeDynascore: computeDynascore,
    leaderboardRows: leaderboardRows,
    sortRows: sortRows,
    formatMetric: formatMetric,
    formatAmrs: formatAmrs,
    spreadText: spreadText,
    pyFixed: pyFixed,
    pyG: pyG,
  };
  if (typeof module === "object" && module.exports) {
    module.exports = api;
    return;
  }

  /* ---- the page ---------------------------------------------------------------------------- */

  function text(el, value) {
    if (el && el.textContent !== value) el.textContent = value;
  }

  /* A metric cell: its value, and under it the measured spread when there is one (_table.html). */
  function metricCell(td, value, spread) {
    var note = td.querySelector("span.spread");
    if (td.firstChild && td.firstChild.nodeType === 3 && td.firstChild.nodeValue === value &&
        (note ? note.textContent : "") === spread) return;
    td.textContent = value;
    if (spread) {
      note = document.createElement("span");
      note.className = "spread muted";
      note.textContent = spread;
      td.appendChild(note);
    }
  }

  function weightText(v) {
    return String(v);
  }

  function enhance() {
    var dataEl = document.getElementById("leaderboard-data");
    var form = document.querySelector("form.weights");
    var table = document.querySelector("table.leaderboard");
    if (!dataEl || !form || !table) return;
    var data = JSON.parse(dataEl.textContent);
    var sliders = Array.prototype.slice.call(form.querySelectorAll("input[type=range]"));
    var tbody = table.tBodies[0];
    var rowsById = {};
    Array.prototype.forEach.call(tbody.querySelectorAll("tr[data-model]"), function (tr) {
      rowsById[tr.getAttribute("data-model")] = tr;
    });
    var meta = {};
    data.models.forEach(function (m) {
      var tr = rowsById[m.id];
      var perf = {};
      data.datasets.forEach(function (d) {
        var s = m.scores[d];
        perf[d] = s && s.perf !== undefined ? s.perf : null;
      });
      meta[m.id] = { name: tr ? tr.querySelector("td.name a:not(.runtime-badge)").textContent : "", datasets: perf };
    });
    var params = new URLSearchParams(window.location.search);
    var sort = form.querySelector("input[name=sort]").value || "dynascore";
    var dir = form.querySelector("input[name=dir]").value || "desc";
    // A step for keyboards and drags when every weight is on it (else any value, as typed in the URL).
    sliders.forEach(function (s) {
      var v = Number(s.value);
      if (Math.abs(v * 10 - Math.round(v * 10)) < 1e-9) s.step = "0.1";
    });
    form.classList.add("live");
    var status = document.getElementById("live-status");
    var settle = null;

    function current() {
      var mw = {}, dw = {};
      sliders.forEach(function (s) {
        var v = Number(s.value);
        if (s.name.indexOf("w_") === 0) mw[s.name.slice(2)] = v;
        else if (s.name.indexOf("d_") === 0) dw[s.name.slice(2)] = v;
      });
      return { mw: mw, dw: dw };
    }

    function update() {
      var w = current();
      sliders.forEach(function (s) {
        var out = form.querySelector('output[for="' + s.id + '"]');
        text(out, weightText(Number(s.value)));
      });
      var result;
      try {
        result = leaderboardRows(data, w.mw, w.dw);
      } catch (err) {
        return;
      }
      var rows = result.rows.map(function (r) {
        r.name = meta[r.model_id].name;
        r.datasets = meta[r.model_id].datasets;
        return r;
      });
      if (sort !== "model") rows = sortRows(rows, sort, dir);
      else rows = rows.sort(function (a, b) {
        return Array.prototype.indexOf.call(tbody.rows, rowsById[a.model_id]) -
          Array.prototype.indexOf.call(tbody.rows, rowsById[b.model_id]);
      });
      rows.forEach(function (r) {
        var tr = rowsById[r.model_id];
        if (!tr) return;
        renderRow(tr, r, result);
        tbody.appendChild(tr);
      });
      renderAmrs(result);
      var query = new URLSearchParams(params.toString());
      sliders.forEach(function (s) { query.set(s.name, weightText(Number(s.value))); });
      syncLinks(query);
      // The address and the spoken status follow once the slider rests (a drag fires dozens of
      // events a second; browsers throttle history updates and a screen reader would read each).
      window.clearTimeout(settle);
      settle = window.setTimeout(function () {
        var url = window.location.pathname + "?" + query.toString() + window.location.hash;
        window.history.replaceState(null, "", url);
        if (status) {
          var first = rows[0];
          text(status, first && first.rank ? "Ranking updated: " + first.name + " is first." : "Ranking updated.");
        }
      }, SETTLE_MS);
    }

    function renderRow(tr, r, result) {
      var cells = tr.cells;
      text(cells[0], r.rank ? String(r.rank) : "\u2013");
      text(cells[2], r.dynascore === null ? "\u2013" : pyFixed(r.dynascore, 4));
      data.metrics.forEach(function (j, i) {
        var td = cells[3 + i];
        var value = r.metrics[j];
        if ((value === null || value === undefined) && j in r.not_measurable) {
          text(td, "not measurable");
          td.className = "num missing";
          td.title = r.not_measurable[j];
        } else {
          metricCell(td, formatMetric(j, value), spreadText((r.spread || {})[j], value));
          td.className = "num";
          td.removeAttribute("title");
        }
      });
      tr.classList.toggle("incomplete", !r.complete);
      var name = cells[1];
      var badge = name.querySelector(".incomplete-badge");
      if (!r.complete) {
        if (!badge) {
          badge = document.createElement("span");
          badge.className = "badge incomplete-badge";
          badge.textContent = "incomplete";
          var anchor = name.querySelector(".row-note");
          var spacer = document.createTextNode(" ");
          name.insertBefore(spacer, anchor ? anchor.previousSibling : null);
          name.insertBefore(badge, anchor ? anchor.previousSibling : null);
        }
        badge.title = "Missing scores: " + r.missing.join(", ");
      } else if (badge) {
        badge.parentNode.removeChild(badge);
      }
      var old = name.querySelectorAll(".row-note");
      Array.prototype.forEach.call(old, function (n) {
        var br = n.previousSibling;
        if (br && br.nodeName === "BR") br.parentNode.removeChild(br);
        n.parentNode.removeChild(n);
      });
      r.notes.forEach(function (note) {
        name.appendChild(document.createElement("br"));
        var span = document.createElement("span");
        span.className = "row-note muted";
        span.textContent = note;
        name.appendChild(span);
      });
    }

    function renderAmrs(result) {
      Array.prototype.forEach.call(document.querySelectorAll("table.amrs tr[data-metric]"), function (tr) {
        var j = tr.getAttribute("data-metric");
        var c = tr.cells;
        var weight = result.metricWeights[j];
        text(c[1], Number.isInteger(weight) ? String(weight) : weight.toFixed(3));
        text(c[2], (result.normalised[j] || 0).toFixed(3));
        text(c[3], formatAmrs(result.amrs[j]));
        text(c[4], result.pairsUsed[j] === undefined ? "\u2013" : String(result.pairsUsed[j]));
        c[5].textContent = "";
        if (result.leftOut[j]) {
          var strong = document.createElement("strong");
          strong.textContent = "left out";
          c[5].appendChild(strong);
          c[5].appendChild(document.createTextNode(": " + result.leftOut[j]));
        } else {
          c[5].textContent = weight ? "yes" : "weight 0";
        }
      });
      var warning = document.querySelector("p.left-out");
      var keys = Object.keys(result.leftOut);
      if (!warning && keys.length) {
        warning = document.createElement("p");
        warning.className = "warning left-out";
        var amrsTable = document.querySelector("table.amrs");
        var amrsBox = amrsTable && (amrsTable.closest(".scroll-region") || amrsTable.parentNode);
        if (amrsBox) amrsBox.parentNode.insertBefore(warning, amrsBox.nextSibling);
      }
      if (warning) {
        warning.hidden = !keys.length;
        warning.textContent = "";
        warning.appendChild(document.createTextNode("Left out of the Dynascore: "));
        keys.forEach(function (k, i) {
          var strong = document.createElement("strong");
          strong.textContent = k;
          warning.appendChild(strong);
          warning.appendChild(document.createTextNode(" (" + result.leftOut[k] + ")" + (i < keys.length - 1 ? "; " : ".")));
        });
      }
    }

    // Sort links and the owners' save/freeze forms carry the weights too.
    function syncLinks(query) {
      Array.prototype.forEach.call(table.querySelectorAll("th a[data-sort]"), function (a) {
        var u = new URL(a.href, window.location.href);
        sliders.forEach(function (s) { u.searchParams.set(s.name, query.get(s.name)); });
        a.href = u.pathname + u.search;
      });
      Array.prototype.forEach.call(document.querySelectorAll(".owner-forms input[type=hidden]"), function (input) {
        if (query.has(input.name) && /^[wd]_/.test(input.name)) input.value = query.get(input.name);
      });
    }

    sliders.forEach(function (s) { s.addEventListener("input", update); });
    var round = form.querySelector("select[name=round]");
    if (round) round.addEventListener("change", function () { form.submit(); });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", enhance);
  else enhance();
})();
