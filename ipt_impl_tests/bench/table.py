#!/usr/bin/env python3
"""Turn build/bench/raw.txt into the bench table (stdout) and a CSV.

    table.py RAW CSV

RAW has one line per measurement process:
    REP TRACE LAYER LIB IMAGE bytes=N insn=N passes=N sec=S mem_kb=N errors=N
"""
import collections
import statistics
import sys

raw, csv = sys.argv[1], sys.argv[2]

# (trace, layer, lib, image) -> list of results
data = collections.OrderedDict()
for line in open(raw):
    f = line.split()
    rep, trace, layer, lib, img = f[:5]
    kv = dict(x.split('=', 1) for x in f[5:] if '=' in x)
    if 'sec' not in kv:
        print('bench: no result for %s %s %s %s: %s'
              % (trace, layer, lib, img, ' '.join(f[5:])))
        continue
    data.setdefault((trace, layer, lib, img), []).append(kv)


def get(trace, layer, lib, img):
    runs = data.get((trace, layer, lib, img))
    if not runs:
        return None

    def m(k):
        return statistics.median(float(r[k]) for r in runs)
    return dict(sec=m('sec'), mem=m('mem_kb') / 1024.0,
                bytes=float(runs[0]['bytes']), insn=float(runs[0]['insn']),
                errors=runs[0]['errors'], n=len(runs))


# Rows: layer, ipt.h image, libipt image, goals.  libipt "best" is its
# fastest set-up for that layer on that trace (first passes: cb, file,
# iscache; warm passes: the +warm ones).
ROWS = [('pkt', '-', '-', 'pkt'), ('pkt', 'batch', '-', 'pktb'),
        ('seg', '-', '-', ''), ('qry', '-', '-', ''),
        ('insn', 'cb', 'cb', ''), ('insn', 'cb', 'file', ''),
        ('insn', 'cb', 'iscache', ''), ('insn', 'cb', 'best', 'insn first'),
        ('insn', 'file', 'file', ''),
        ('insn', 'cb+warm', 'best+warm', 'insn'),
        ('blk', 'cb', 'cb', 'blk-cb'), ('blk', 'cb', 'iscache', 'blk-isc'),
        ('blk', 'cb', 'file', ''), ('blk', 'file', 'file', ''),
        ('blk', 'cb', 'best', 'first'),
        ('blk', 'cb+warm', 'iscache+warm', 'blk-isc'),
        ('cov', 'cb', 'cb', 'cov'), ('covwarm', 'cb', 'cb', 'cov')]
GOALS = {'pkt': 1.5, 'pktb': 0.0, 'insn': 3.0, 'blk-cb': 10.0,
         'blk-isc': 3.0, 'first': 2.0, 'cov': 20.0}
BEST = {'best': ('cb', 'file', 'iscache'),
        'best+warm': ('cb+warm', 'file+warm', 'iscache+warm')}
# libipt has no warm coverage decoder: both coverage rows compare with its
# block decoder, fresh per pass.
LIB_LAYER = {'covwarm': 'cov'}
hdr = ('trace', 'layer', 'ipt.h', 'libipt', 'ipt MB/s', 'ipt Mi/s',
       'lib MB/s', 'lib Mi/s', 'ratio', 'ipt MiB', 'lib MiB', 'mem x',
       'goal', 'errs')
rows = []
traces = []
for k in data:
    if k[0] not in traces:
        traces.append(k[0])


def mbs(v):
    v /= 1e6
    return '%.0f' % v if v >= 100 else '%.3g' % v


def mi(r):
    return '%.1f' % (r['insn'] / r['sec'] / 1e6) if r['insn'] else ''


for trace in traces:
    for layer, imi, iml, goal in ROWS:
        a = get(trace, layer, 'ipt', imi)
        if iml in BEST:
            cands = [(get(trace, layer, 'libipt', i), i)
                     for i in BEST[iml]]
            cands = [c for c in cands if c[0]]
            if not cands:
                continue
            b, bi = min(cands, key=lambda c: c[0]['sec'])
            libname = 'best=' + bi.replace('+warm', '')
        else:
            b = get(trace, LIB_LAYER.get(layer, layer), 'libipt', iml)
            libname = iml if iml != '-' else ''
        if not a or not b:
            continue
        ta, tb = a['sec'], b['sec']
        ratio = tb / ta if ta > 0 else 0.0
        g = []
        for k in goal.split():
            ok = ratio >= GOALS[k]
            what = '>=%gx' % GOALS[k]
            if k in ('pkt', 'pktb'):
                ok = ok and (k == 'pkt' or a['bytes'] / ta >= 1e9)
                what = '>=1.5x' if k == 'pkt' else '>=1GB/s'
            if k == 'first':
                what = 'first ' + what
            g.append('%s: %s' % (what, 'ok' if ok else 'MISSED'))
        g = ', '.join(g)
        errs = '%s/%s' % (a['errors'], b['errors'])
        if a['insn'] != b['insn'] and layer not in ('cov', 'covwarm'):
            errs += ' (insn %d/%d)' % (a['insn'], b['insn'])
        rows.append((trace, layer, imi if imi != '-' else '', libname,
                     mbs(a['bytes'] / ta), mi(a),
                     mbs(b['bytes'] / tb), mi(b),
                     '%.2f' % ratio, '%.2f' % a['mem'], '%.2f' % b['mem'],
                     '%.1f' % (a['mem'] / b['mem'])
                     if b['mem'] >= 0.05 else '-',
                     g, errs))

w = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]


def show(r):
    print('  '.join(str(x).rjust(w[i]) if 4 <= i <= 11 else
                    str(x).ljust(w[i]) for i, x in enumerate(r)).rstrip())


print()
show(hdr)
last = None
for r in rows:
    if last and r[0] != last:
        print()
    last = r[0]
    show(r)
print('''
ratio   libipt time / ipt.h time: medians over the repetitions of the
        processor time per pass.  Mi/s: million instructions per second;
        MB/s: trace bytes (10^6) per second.
images  cb: read-memory callback; file: pt_image_add_file; iscache:
        pt_iscache_add_file + pt_image_add_cached; best: libipt's fastest.
        Every pass is a first pass (fresh decoder, image and caches) but
        for +warm: the same decoder again, its caches filled by an untimed
        pass.  pkt batch: ipt_pkt_next_batch, 64 packets a call.
memory  peak RSS growth while decoding (getrusage ru_maxrss minus a
        baseline taken after loading trace and code), MiB, median: the
        decoder, its image and their caches.  mem x = ipt.h / libipt
        ("-" when libipt's is below 0.05 MiB, as with its callback image,
        which caches nothing).  Goal: within 2x of libipt's caching set-ups.
goals   pt_blk_next >= 10x libipt's block decoder with the callback image
        and >= 3x with its iscache; pt_insn_next >= 3x libipt's fastest
        set-up; first passes >= 2x libipt's fastest; pt_pkt_next >= 1.5x
        libipt; ipt_pkt_next_batch >= 1 GB/s; coverage (ipt_cov_decode,
        first pass on a fresh decoder and warm) >= 20x libipt's
        pt_blk_next hashing each block's edge, on a fresh decoder with
        the callback image.  Mi/s of cov rows: million edges/s.
errs    decode errors (resynchronizations) ipt.h/libipt in one pass.''')
with open(csv, 'w') as f:
    f.write(','.join(h.replace(' ', '_') for h in hdr) + '\n')
    for r in rows:
        f.write(','.join('"%s"' % x if (' ' in str(x) or ',' in str(x))
                         else str(x) for x in r) + '\n')
print('bench: table in %s, raw numbers in %s' % (csv, raw))
