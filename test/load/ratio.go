package main

import (
	"fmt"
	"io"
	"time"
)

// row is one server's figures under one load.
type row struct {
	server, load string
	answered     int
	p99, drain   time.Duration
	cpu          time.Duration // the server's CPU over the load and its drain
}

func (r row) cpuPerAnswer() time.Duration {
	if r.answered == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.answered)
}

// printRatios sets permtui's figures beside the floor's (the minimal
// responder) and pi's node's, load by load and pooled over all loads (CPU
// per answer over every request of the run), as the cost targets are
// stated: a ratio below 1 is cheaper or faster than the other server.
func printRatios(out io.Writer, rows []row) {
	find := func(server, load string) (row, bool) {
		for _, r := range rows {
			if r.server == server && r.load == load {
				return r, true
			}
		}
		return row{}, false
	}
	others := []string{"minimal", "pi"}
	fmt.Fprintln(out, "| load | permtui ÷ minimal: CPU/answer, drain, p99 | permtui ÷ pi: CPU/answer, drain, p99 |")
	fmt.Fprintln(out, "| --- | --- | --- |")
	pooled := map[string]row{}
	for _, p := range rows {
		if p.server != "permtui" {
			continue
		}
		line := "| " + p.load
		for _, o := range others {
			r, ok := find(o, p.load)
			if !ok {
				line += " | —"
				continue
			}
			line += fmt.Sprintf(" | %s, %s, %s", ratio(p.cpuPerAnswer(), r.cpuPerAnswer()), ratio(p.drain, r.drain), ratio(p.p99, r.p99))
			for _, server := range []string{"permtui", o} {
				src := p
				if server == o {
					src = r
				}
				key := server + "/" + o
				acc := pooled[key]
				acc.cpu += src.cpu
				acc.answered += src.answered
				pooled[key] = acc
			}
		}
		fmt.Fprintln(out, line+" |")
	}
	line := "| all loads pooled (CPU/answer)"
	for _, o := range others {
		mine, theirs := pooled["permtui/"+o], pooled[o+"/"+o]
		if theirs.answered == 0 {
			line += " | —"
			continue
		}
		line += fmt.Sprintf(" | %s (%s vs %s)", ratio(mine.cpuPerAnswer(), theirs.cpuPerAnswer()), us(mine.cpuPerAnswer()), us(theirs.cpuPerAnswer()))
	}
	fmt.Fprintln(out, line+" |")
	fmt.Fprintln(out)
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}
