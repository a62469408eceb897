import type { KubeHttp } from './kube-http.ts';

// What the API server itself counted, read from its /metrics (as the admin) before and after a step.
//
// - `apiserver_request_total{verb,resource,subresource,code}`: requests, every client's. The bench's
//   own Node Lease renewals (playing kubelet) are kept apart as background, and so are WATCHes: a
//   watch is counted, with every byte it streamed, when it ends, which is whenever a client's watch
//   times out or is restarted (the control plane's informers, the shim), not when a step asks.
// - `apiserver_response_sizes_sum` / `_count` {verb,resource}: response bytes. The API server
//   counts them where it writes the body, after compression: responses over 128 KiB are gzipped
//   when the client accepts gzip, which Flotilla's client (undici fetch) does. Large LISTs are
//   therefore counted at their compressed size; the JSON the client decodes is far larger (see
//   `listedObjects`).
// - `apiserver_cache_list_returned_objects_total` and `apiserver_storage_list_returned_objects_total`
//   {resource_prefix|resource}: objects LISTs returned (from the watch cache or etcd), to see how many
//   times a step read the whole pod list.
// - `apiserver_flowcontrol_dispatched_requests_total{flow_schema}`: requests of Flotilla's own
//   identities, through flow schemas the bench adds (same priority levels as before).

export type Sample = ReadonlyMap<string, number>;

const FAMILIES = [
  'apiserver_request_total',
  'apiserver_response_sizes_sum',
  'apiserver_response_sizes_count',
  'apiserver_cache_list_returned_objects_total',
  'apiserver_storage_list_returned_objects_total',
  'apiserver_flowcontrol_dispatched_requests_total',
];

/** Reads the counters this module reports on, keyed by `family{label=value,…}` (labels sorted). */
export async function scrape(http: KubeHttp): Promise<Sample> {
  const text = await http.text('/metrics');
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const family = FAMILIES.find((f) => line.startsWith(`${f}{`) || line.startsWith(`${f} `));
    if (family === undefined) continue;
    const match = /^([a-z_]+)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels = parseLabels(match[2] ?? '');
    const value = Number(match[3]);
    out.set(keyOf(family, labels), (out.get(keyOf(family, labels)) ?? 0) + value);
  }
  return out;
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const m of text.matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[m[1] ?? ''] = m[2] ?? '';
  return labels;
}

function keyOf(family: string, labels: Record<string, string>): string {
  const keep =
    family === 'apiserver_flowcontrol_dispatched_requests_total'
      ? ['flow_schema']
      : family.startsWith('apiserver_cache_list') || family.startsWith('apiserver_storage_list')
        ? ['resource_prefix', 'resource', 'group']
        : ['verb', 'group', 'resource', 'subresource'];
  const parts = keep
    .filter((k) => labels[k] !== undefined && labels[k] !== '')
    .map((k) => `${k}=${labels[k]}`);
  return `${family}{${parts.join(',')}}`;
}

/** One step's API traffic, from two samples. */
export interface Traffic {
  /** Requests by `VERB resource[/subresource]`, background (Lease renewals) excluded. */
  readonly requests: Readonly<Record<string, number>>;
  readonly requestsTotal: number;
  /** Response bytes by `VERB resource`, background excluded (compressed where gzipped). */
  readonly bytes: Readonly<Record<string, number>>;
  readonly bytesTotal: number;
  /** The bench's Node Lease renewals in the same interval (not in the totals). */
  readonly background: number;
  /** WATCH requests that ended in the interval, and what they streamed (not in the totals). */
  readonly watches: number;
  readonly watchBytes: number;
  /** Requests of Flotilla's identities (controller group and shim), from API Priority and Fairness. */
  readonly flotilla: number;
  /** Objects returned by LISTs, by resource (watch cache and etcd together). */
  readonly listedObjects: Readonly<Record<string, number>>;
}

const BACKGROUND = new Set(['leases']);

export function traffic(before: Sample, after: Sample, flowSchemas: readonly string[]): Traffic {
  const requests: Record<string, number> = {};
  const bytes: Record<string, number> = {};
  const listedObjects: Record<string, number> = {};
  let background = 0;
  let watches = 0;
  let watchBytes = 0;
  let flotilla = 0;
  for (const [key, value] of after) {
    const delta = value - (before.get(key) ?? 0);
    if (delta <= 0) continue;
    const family = key.slice(0, key.indexOf('{'));
    const labels = Object.fromEntries(
      key
        .slice(key.indexOf('{') + 1, -1)
        .split(',')
        .filter((p) => p !== '')
        .map((p) => p.split('=') as [string, string]),
    );
    const resource = labels['resource'] ?? '';
    const name = `${labels['verb']} ${resource}${labels['subresource'] ? `/${labels['subresource']}` : ''}`;
    switch (family) {
      case 'apiserver_request_total':
        if (BACKGROUND.has(resource)) background += delta;
        else if (labels['verb'] === 'WATCH') watches += delta;
        else requests[name] = (requests[name] ?? 0) + delta;
        break;
      case 'apiserver_response_sizes_sum':
        if (labels['verb'] === 'WATCH') watchBytes += delta;
        else if (!BACKGROUND.has(resource)) bytes[name] = (bytes[name] ?? 0) + delta;
        break;
      case 'apiserver_cache_list_returned_objects_total':
      case 'apiserver_storage_list_returned_objects_total': {
        const what = (labels['resource_prefix'] ?? resource).replace(/^\//, '').split('/').pop() ?? '';
        listedObjects[what] = (listedObjects[what] ?? 0) + delta;
        break;
      }
      case 'apiserver_flowcontrol_dispatched_requests_total':
        if (flowSchemas.includes(labels['flow_schema'] ?? '')) flotilla += delta;
        break;
      default:
        break;
    }
  }
  const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  return {
    requests,
    requestsTotal: sum(requests),
    bytes,
    bytesTotal: sum(bytes),
    background,
    watches,
    watchBytes,
    flotilla,
    listedObjects,
  };
}
