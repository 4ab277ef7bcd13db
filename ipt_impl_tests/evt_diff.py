#!/usr/bin/env python3
"""Compare the outputs of evt_diff built on ipt.h and on libipt 2.0.5.

usage: evt_diff.py IPT_OUTPUT LIBIPT_OUTPUT

Streams are compared one by one (a stream = its packets under both errata
settings).  ipt.h follows libipt 2.3, whose query decoder is built on its
event decoder and differs from 2.0.5 on purpose in the points below.  Each
is removed from both outputs by one rule, so anything else that differs is
a failure:

  R1  offsets: 2.3 reports the offset of the packet its event decoder works
      on; 2.0.5 that of the next packet after its own read-ahead.  Offsets
      after queries are not compared (sync offsets are: they are printed
      on the sync lines via the ip, and the stream position shows in every
      later answer).
  R2  2.3 reports an enabled (or disabled) status event first for every
      PSB+; 2.0.5 has none.  Dropped from the ipt.h side.
  R3  2.3 reports MODE.EXEC only when the mode changes; 2.0.5 every one.
      Unchanged exec_mode events are dropped from the 2.0.5 side.
  R4  because of R2/R3 the pts_event_pending bit of an answer may differ;
      it is masked (the events themselves are compared).
  R5  event time stamps: 2.3 stamps every event with the time at the
      packet that completes it (async_vmcs, ptwrite, pwrx, ... included);
      2.0.5 stamps some at other packets and some not at all.  Event tsc
      fields are not compared; pt_qry_time() after every answer is.
  R6  2.3 checks MODE.EXEC status updates in PSB+ against the state it
      knows and fails with -pte_bad_status_update; 2.0.5 does not check.
      A stream where the ipt.h side reports -pte_bad_status_update (-22)
      is compared only up to that point.
  R7  2.3 answers the indirect branch of a TIP before the MODE.EXEC event
      bound to it (the event's IP is the branch target); 2.0.5 reports the
      event first.  On the 2.0.5 side such a pair is swapped back.
  R8  a failed sync: 2.3 has already reset its time, 2.0.5 still reports
      the time before.  The time after a failed sync is not compared.
  R9  deferred errors: 2.3 reads one event ahead and reports its decode
      error only after the TNT bits cached before it are used up; 2.0.5
      reports it at the query that reads ahead and loses those bits.  The
      run of cond answers right before an error is dropped on both sides,
      and the error is compared by its code only ("error N").
  R10 the end: 2.3 flags the last answer with pts_eos; 2.0.5 answers
      without it and fails the next query with -pte_eos.  The eos bit is
      masked and every -pte_eos becomes one "end" line.
"""
import re
import sys

OP = re.compile(r'^(sync|event|cond|indirect) (-?\d+)(.*)$')


def streams(path):
    out, cur, name = {}, None, None
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('== stream'):
                name = line
                cur = out.setdefault(name, [])
            if cur is not None:
                cur.append(line)
    return out


def normalize(lines, side):
    res = []
    mode = None
    for line in lines:
        head, _, state = line.partition(' | ')
        if state:
            # R1: drop the offset.
            state = re.sub(r'off -?\d+ [0-9a-f]+ ', '', state)
        m = OP.match(head)
        if not m:
            res.append(line)
            if line.startswith('-- errata'):
                mode = None
            continue
        op, status, rest = m.group(1), int(m.group(2)), m.group(3)
        if op == 'sync':
            mode = None
        if op == 'event' and status >= 0:
            ev = re.search(r' ev (\d+) supp (\d) status (\d)', rest)
            evtype, evstatus = int(ev.group(1)), int(ev.group(3))
            # R2
            if side == 'ipt' and evtype in (0, 1) and evstatus == 1:
                continue
            if evtype == 7:
                m2 = re.search(r' mode (\d+)', rest)
                newmode = m2.group(1)
                # R3
                if (side == 'lib' and evstatus == 0 and mode == newmode):
                    continue
                mode = newmode
            if evtype == 6:
                mode = None
            # R5
            rest = re.sub(r' tsc [0-9a-f]+ \d+ \d+', '', rest)
        # R4
        if status >= 0:
            status &= ~1
        # R8
        if op == 'sync' and status < 0:
            state = ''
        res.append('%s %d%s | %s' % (op, status, rest, state))
    if side == 'lib':
        res = swap_exec_mode(res)
    return errors_and_end(res)


def errors_and_end(lines):
    out = []
    for line in lines:
        m = OP.match(line.partition(' | ')[0])
        if not m:
            out.append(line)
            continue
        op, status = m.group(1), int(m.group(2))
        if status == -7:
            # R10
            if not (out and out[-1] == 'end'):
                out.append('end')
            continue
        if status < 0 and op != 'sync':
            # R9
            while out and out[-1].startswith('cond '):
                out.pop()
            out.append('error %d' % status)
            continue
        if status >= 0 and status & 4:
            line = re.sub(r'^(\w+) (\d+)', lambda x: '%s %d' % (
                x.group(1), int(x.group(2)) & ~4), line)
        out.append(line)
    return out


def swap_exec_mode(lines):
    # R7
    out = list(lines)
    for i in range(len(out) - 1):
        a = re.match(r'^event \d+ ev 7 supp 0 status 0 mode \d+ ip ([0-9a-f]+)',
                     out[i])
        b = re.match(r'^indirect \d+ ip ([0-9a-f]+)', out[i + 1])
        if a and b and a.group(1) == b.group(1):
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def cut_status_update(a, b):
    # R6
    for i, line in enumerate(a):
        if re.match(r'^(sync|event|cond|indirect) -22\b', line):
            return a[:i], b[:i]
    return a, b


def main():
    ipt = streams(sys.argv[1])
    lib = streams(sys.argv[2])
    passed = failed = 0
    shown = 0
    for name in sorted(set(ipt) | set(lib)):
        a = normalize(ipt.get(name, []), 'ipt')
        b = normalize(lib.get(name, []), 'lib')
        a, b = cut_status_update(a, b)
        if a == b:
            passed += 1
            continue
        failed += 1
        if shown < 5:
            shown += 1
            print('DIFF %s' % name)
            for i in range(max(len(a), len(b))):
                la = a[i] if i < len(a) else '<none>'
                lb = b[i] if i < len(b) else '<none>'
                if la != lb:
                    print('  ipt.h:  %s' % la)
                    print('  libipt: %s' % lb)
                    break
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
