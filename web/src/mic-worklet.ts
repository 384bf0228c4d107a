/**
 * AudioWorklet processor of the Live view: collects the microphone's first channel (float32
 * at the AudioContext's rate) into ~85 ms blocks and posts each block's buffer (transferred)
 * to the page, which sends it over the WebSocket as f32le.
 */

// The AudioWorkletGlobalScope is not in TypeScript's DOM library.
declare class AudioWorkletProcessor {
  readonly port: MessagePort;
}
declare function registerProcessor(name: string, ctor: new () => AudioWorkletProcessor): void;

const BLOCK_FRAMES = 4096;

class MicProcessor extends AudioWorkletProcessor {
  private block = new Float32Array(BLOCK_FRAMES);
  private filled = 0;

  process(inputs: Float32Array[][]): boolean {
    const input = inputs[0]?.[0];
    if (!input) return true;
    let off = 0;
    while (off < input.length) {
      const n = Math.min(input.length - off, BLOCK_FRAMES - this.filled);
      this.block.set(input.subarray(off, off + n), this.filled);
      this.filled += n;
      off += n;
      if (this.filled === BLOCK_FRAMES) {
        this.port.postMessage(this.block.buffer, [this.block.buffer]);
        this.block = new Float32Array(BLOCK_FRAMES);
        this.filled = 0;
      }
    }
    return true;
  }
}

registerProcessor('auris-mic', MicProcessor);
