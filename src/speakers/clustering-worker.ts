/**
 * The speaker clustering thread (clustering-thread.ts): runs the same pure functions the main
 * thread would (speakersOfFile, freeClusters, countedClusters) on the windows it is sent, off the main event loop.
 */
import { parentPort } from 'node:worker_threads';
import { ownsWholeBuffer } from '../inference/protocol';
import { unpackRows, unpackWindows, type ClusteringReply, type ClusteringRequest } from './clustering-protocol';
import { speakersOfFile } from './file-map';
import { freeClusters } from './free-recluster';
import type { SpeakerMapInfo } from './manifest';
import { countedClusters } from './recluster';

const port = parentPort;
if (!port) throw new Error('the speaker clustering worker must run in a worker thread');

const maps = new Map<number, SpeakerMapInfo>();

function answer(msg: ClusteringRequest): { reply: ClusteringReply; transfer: ArrayBuffer[] } {
  if (msg.map) maps.set(msg.mapId, msg.map);
  const map = maps.get(msg.mapId);
  if (!map) throw new Error(`speaker map ${msg.mapId} was never sent`);
  const windows = unpackWindows(msg.windows);
  if (msg.type === 'file') {
    const found = speakersOfFile(map, windows, msg.steps, msg.speech, msg.counts);
    const reply: ClusteringReply = { type: 'file', id: msg.id, keys: found.keys, probs: found.probs, embeddings: found.embeddings.toData() };
    return { reply, transfer: ownsWholeBuffer(found.probs) ? [found.probs.buffer as ArrayBuffer] : [] };
  }
  if (msg.type === 'counted') return { reply: { type: 'counted', id: msg.id, clusters: countedClusters(windows, map.params, msg.speakers) }, transfer: [] };
  const whitened = msg.whitened ? unpackRows(msg.whitened, msg.windows.dim) : undefined;
  return { reply: { type: 'free', id: msg.id, clusters: freeClusters(windows, map, msg.cap, whitened) }, transfer: [] };
}

port.on('message', (msg: ClusteringRequest) => {
  try {
    const { reply, transfer } = answer(msg);
    port.postMessage(reply, transfer);
  } catch (e) {
    port.postMessage({ type: 'error', id: msg.id, message: (e as Error)?.message ?? String(e) } satisfies ClusteringReply);
  }
});
