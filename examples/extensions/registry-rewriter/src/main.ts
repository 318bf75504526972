// A cairn restore extension in TypeScript: every container image under
// --from is restored under --to instead (Velero's change-image-name, as an
// extension). It is a Temporal worker on its own task queue that serves
// the contract's activity, cairn.extension.v1.RestoreItems
// (docs/extensions.md); it registers no workflows.
//
//   node dist/main.js --address 127.0.0.1:7233 --namespace default \
//     --task-queue registry-rewriter --from docker.io/ --to registry.example/
import { NativeConnection, Worker } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/common';

interface Resource {
  group: string;
  version: string;
  resource: string;
  kind: string;
}

interface RestoreItemsRequest {
  restore: string;
  backup: string;
  extension: string;
  resource: Resource;
  items: Record<string, any>[];
}

interface RestoreItemAnswer {
  item?: Record<string, any>;
  skip?: string;
  error?: string;
}

interface Options {
  address: string;
  namespace: string;
  taskQueue: string;
  from: string;
  to: string;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { address: '127.0.0.1:7233', namespace: 'default', taskQueue: '', from: '', to: '' };
  const names: Record<string, keyof Options> = {
    '--address': 'address', '--namespace': 'namespace', '--task-queue': 'taskQueue', '--from': 'from', '--to': 'to',
  };
  for (let i = 0; i < argv.length; i += 2) {
    const key = names[argv[i]];
    if (!key || argv[i + 1] === undefined) {
      throw new Error(`unknown or incomplete flag ${argv[i]}; flags: ${Object.keys(names).join(' ')}`);
    }
    opts[key] = argv[i + 1];
  }
  if (!opts.taskQueue || !opts.from || !opts.to) {
    throw new Error('--task-queue, --from and --to are required');
  }
  return opts;
}

// podSpecOf finds the pod spec of the workload kinds that hold one.
function podSpecOf(obj: Record<string, any>): Record<string, any> | undefined {
  switch (obj.kind) {
    case 'Pod':
      return obj.spec;
    case 'CronJob':
      return obj.spec?.jobTemplate?.spec?.template?.spec;
    case 'Deployment':
    case 'StatefulSet':
    case 'DaemonSet':
    case 'ReplicaSet':
    case 'Job':
    case 'ReplicationController':
      return obj.spec?.template?.spec;
  }
  return undefined;
}

function rewrite(obj: Record<string, any>, from: string, to: string): boolean {
  const spec = podSpecOf(obj);
  let changed = false;
  for (const list of [spec?.containers, spec?.initContainers, spec?.ephemeralContainers]) {
    for (const c of list ?? []) {
      if (typeof c.image === 'string' && c.image.startsWith(from)) {
        c.image = to + c.image.slice(from.length);
        changed = true;
      }
    }
  }
  return changed;
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const restoreItems = async (req: RestoreItemsRequest): Promise<{ items: RestoreItemAnswer[] }> => {
    if (!Array.isArray(req.items)) {
      throw ApplicationFailure.nonRetryable('the request holds no items', 'ExtensionRefused');
    }
    return {
      items: req.items.map((item) => (rewrite(item, opts.from, opts.to) ? { item } : {})),
    };
  };
  const connection = await NativeConnection.connect({ address: opts.address });
  const worker = await Worker.create({
    connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: { 'cairn.extension.v1.RestoreItems': restoreItems },
  });
  console.log(`registry-rewriter: polling ${opts.taskQueue}, ${opts.from} -> ${opts.to}`);
  await worker.run();
}

main().catch((err) => {
  console.error(`registry-rewriter: ${err instanceof Error ? err.message : err}`);
  process.exit(1);
});
