/**
 * Loading real-world catalogs: GitHub's full spec (13 MB, about 1,100 operations) and the seeded corpus
 * sample the corpus test uses, each beside reading and parsing the same files with `JSON.parse` alone (the
 * floor any loader pays). Needs the corpus (`npm run corpus`); without it the benchmark says so and
 * measures nothing.
 */
import { readFileSync } from "node:fs";
import { LoadReport, loadToolFile } from "../src/catalog/index.js";
import { readDocument } from "../src/catalog/read-document.js";
import { corpusAvailable, githubSpecPath, sampleDirectorySpecs } from "../test/corpus/corpus.js";
import { CORPUS_SAMPLE_SEED, CORPUS_SAMPLE_SIZE } from "../test/corpus/sample.js";
import { type BenchResult, median } from "./report.js";

/** Median wall time of `rounds` runs of `work`, in milliseconds. */
async function timeMs(work: () => unknown, rounds: number): Promise<number> {
  const samples: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const started = performance.now();
    await work();
    samples.push(performance.now() - started);
  }
  return median(samples);
}

export async function benchCatalog(): Promise<BenchResult> {
  if (!corpusAvailable()) {
    return {
      name: "catalog loading",
      lines: ["skipped: the corpus is not installed (run `npm run corpus`)"],
      report: { skipped: true },
    };
  }
  const github = githubSpecPath();
  const sample = sampleDirectorySpecs(CORPUS_SAMPLE_SIZE, CORPUS_SAMPLE_SEED);
  const sampleBytes = sample.reduce((total, file) => total + readFileSync(file).length, 0);

  let githubTools = 0;
  const githubParse = await timeMs(() => JSON.parse(readFileSync(github, "utf8")), 3);
  const githubRead = await timeMs(() => readDocument(github), 3);
  const githubLoad = await timeMs(async () => {
    githubTools = (await loadToolFile(github, { report: new LoadReport() })).length;
  }, 3);

  let sampleTools = 0;
  const sampleParse = await timeMs(() => {
    for (const file of sample) readDocument(file);
  }, 1);
  const sampleLoad = await timeMs(async () => {
    sampleTools = 0;
    for (const file of sample) sampleTools += (await loadToolFile(file, { report: new LoadReport() })).length;
  }, 1);

  const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
  const lines = [
    "| input | tools | parse only (ms) | load (ms) | load / parse |",
    "|---|---:|---:|---:|---:|",
    `| GitHub api.github.com.json (${mb(readFileSync(github).length)} MB), JSON.parse | ${githubTools} | ${githubParse.toFixed(0)} | ${githubLoad.toFixed(0)} | ${(githubLoad / githubParse).toFixed(1)}x |`,
    `| same, readDocument (terrarium's reader) | | ${githubRead.toFixed(0)} | | |`,
    `| corpus sample: ${sample.length} specs (${mb(sampleBytes)} MB of JSON) | ${sampleTools} | ${sampleParse.toFixed(0)} | ${sampleLoad.toFixed(0)} | ${(sampleLoad / sampleParse).toFixed(1)}x |`,
  ];
  return {
    name: "catalog loading",
    lines,
    report: {
      github: { tools: githubTools, parseMs: githubParse, readMs: githubRead, loadMs: githubLoad },
      sample: {
        specs: sample.length,
        bytes: sampleBytes,
        tools: sampleTools,
        parseMs: sampleParse,
        loadMs: sampleLoad,
      },
    },
  };
}
