package hub

import "github.com/nats-io/nats-server/v2/server"

// RelayPermissions is what a relay for host may do, enforced by the server
// (docs/hub.md, "Role permissions", decisions 0162, 0211 and 0212): publish
// asks and withdrawals for its own host; read its host's decisions through
// its one durable consumer (the filter is part of the create subject, so no
// other filter is allowed) and look up an approver's mark of one; follow its host's grants through one consumer
// of its own name and write the grants its server recorded, under its
// host's keys only, and publish the grants it applies (decision 0274).
// It cannot create any other consumer, touch stream
// configurations, publish decisions, nor read another host's decisions,
// grants or replies, nor write another host's grants.
func RelayPermissions(host string) *server.Permissions {
	c, g, own := RelayConsumer(host), GrantsConsumer(host), GrantSubjectPrefix+host+"."
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			"permtui.ask." + host + ".*",
			"permtui.gone." + host + ".*",
			"$JS.API.CONSUMER.CREATE." + DecisionsStream + "." + c + "." + DecisionSubjectPrefix + host + ".>",
			"$JS.API.CONSUMER.INFO." + DecisionsStream + "." + c,
			"$JS.API.CONSUMER.MSG.NEXT." + DecisionsStream + "." + c,
			"$JS.ACK." + DecisionsStream + "." + c + ".>",
			MarkGetSubject(DecisionKey(host, "*") + ".*.*"),
			"$JS.API.CONSUMER.CREATE." + GrantsStream + "." + g + "." + own + ">",
			"$JS.API.CONSUMER.INFO." + GrantsStream + "." + g,
			"$JS.API.CONSUMER.DELETE." + GrantsStream + "." + g,
			"$JS.API.CONSUMER.MSG.NEXT." + GrantsStream + "." + g,
			"$JS.API.STREAM.INFO." + GrantsStream,
			"$JS.API.DIRECT.GET." + GrantsStream + "." + own + "*",
			own + "*",
			own + "*" + AppliedSuffix,
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{relayInbox(host) + ".>"}},
	}
}

// ApproverPermissions is what the console or headless approver name may do:
// read the asks (its own ordered consumers on the asks stream), create
// decisions, mark them under its own name only (decision 0212) and look up
// who decided, follow every host's grants and write them (a revocation is a
// write of the host's key). It cannot publish asks or withdrawals, mark a
// decision under another approver's name, touch the decisions stream's
// consumers, the relays' grants consumers (denied by name for each of
// relays) or any stream configuration.
func ApproverPermissions(name string, relays []string) *server.Permissions {
	var deny []string
	for _, h := range relays {
		g := GrantsStream + "." + GrantsConsumer(h)
		deny = append(deny, "$JS.API.CONSUMER.*."+g, "$JS.API.CONSUMER.*."+g+".>", "$JS.API.CONSUMER.MSG.NEXT."+g)
	}
	return &server.Permissions{
		Publish: &server.SubjectPermission{
			Allow: []string{
				"$JS.API.STREAM.INFO." + AsksStream,
				"$JS.API.CONSUMER.CREATE." + AsksStream + ".*",
				"$JS.API.CONSUMER.DELETE." + AsksStream + ".*",
				"$JS.API.CONSUMER.MSG.NEXT." + AsksStream + ".*",
				"$JS.API.DIRECT.GET." + AsksStream + ".>",
				"$JS.API.STREAM.INFO." + DecisionsStream,
				"$JS.API.DIRECT.GET." + DecisionsStream + "." + DecisionSubjectPrefix + "*.*",
				DecisionSubjectPrefix + "*.*",
				DecisionSubjectPrefix + "*.*." + name + ".*",
				"$JS.API.STREAM.INFO." + GrantsStream,
				"$JS.API.CONSUMER.CREATE." + GrantsStream + ".*",
				"$JS.API.CONSUMER.DELETE." + GrantsStream + ".*",
				"$JS.API.CONSUMER.MSG.NEXT." + GrantsStream + ".*",
				"$JS.API.DIRECT.GET." + GrantsStream + "." + GrantSubjectPrefix + "*.*",
				GrantSubjectPrefix + "*.*",
			},
			Deny: deny,
		},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
	}
}
