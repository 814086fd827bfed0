// The dashboard's only script: draws a run's curve with uPlot (served from node_modules) and, while the run is
// going, polls the JSON API, redraws the curve and refreshes the rest of the page (#live) when an iteration ends.
/* global uPlot */
window.voltDashboard = {
  curve(runId, initial) {
    const el = document.getElementById('curve');
    const toData = (c) => {
      const xs = [...new Set([...c.iterations, ...c.evalIterations])].sort((a, b) => a - b);
      const reward = new Map(c.iterations.map((x, i) => [x, c.meanReward[i]]));
      const evals = new Map(c.evalIterations.map((x, i) => [x, c.evalScores[i]]));
      return [xs, xs.map((x) => reward.get(x) ?? null), xs.map((x) => evals.get(x) ?? null)];
    };
    const labels = initial.curve.labels ?? {
      reward: 'mean training reward',
      eval: 'held-out score',
      x: 'updates applied',
    };
    const opts = {
      width: el.clientWidth || 800,
      height: 300,
      spanGaps: true,
      scales: { x: { time: false } },
      axes: [{ label: labels.x }, {}],
      series: [
        { label: labels.x },
        { label: labels.reward, stroke: '#3b7dd8', points: { show: true } },
        { label: labels.eval, stroke: '#2a9d55', points: { show: true } },
      ],
    };
    const plot = new uPlot(opts, toData(initial.curve), el);
    if (!initial.running) return;
    let points = initial.curve.iterations.length;
    const url = `/api/runs/${encodeURIComponent(runId)}/curve`;
    const tick = async () => {
      try {
        const r = await fetch(url, { credentials: 'same-origin' });
        if (!r.ok) return;
        const body = await r.json();
        plot.setData(toData(body.curve));
        if (body.curve.iterations.length !== points) {
          points = body.curve.iterations.length;
          el.dataset.points = String(points);
          const html = await (await fetch(location.href, { credentials: 'same-origin' })).text();
          // Everything but the chart: the iteration table, the summary, the samples of the last iteration.
          const fresh = new DOMParser().parseFromString(html, 'text/html').getElementById('live');
          const live = document.getElementById('live');
          if (fresh && live) live.innerHTML = fresh.innerHTML;
        }
        if (!body.running) return;
      } catch {
        // The dashboard restarting or the network: try again at the next tick.
      }
      setTimeout(tick, 3000);
    };
    setTimeout(tick, 3000);
  },
};
