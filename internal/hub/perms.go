package hub

import "github.com/nats-io/nats-server/v2/server"

// RelayPermissions is what a relay for host may do, enforced by the server:
// publish asks and withdrawals for its own host; read the decisions for its
// own host through its one durable consumer (the filter is part of the
// create subject, so no other filter is allowed); read the grants. It
// cannot publish decisions or grants, nor read another host's decisions.
func RelayPermissions(host string) *server.Permissions {
	c := RelayConsumer(host)
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			"permtui.ask." + host + ".*",
			"permtui.gone." + host + ".*",
			"$JS.API.CONSUMER.CREATE." + DecisionsStream + "." + c + ".$KV." + DecisionsBucket + "." + host + ".>",
			"$JS.API.CONSUMER.INFO." + DecisionsStream + "." + c,
			"$JS.API.CONSUMER.MSG.NEXT." + DecisionsStream + "." + c,
			"$JS.ACK." + DecisionsStream + "." + c + ".>",
			"$JS.API.STREAM.INFO." + GrantsStream,
			"$JS.API.CONSUMER.CREATE." + GrantsStream,
			"$JS.API.CONSUMER.CREATE." + GrantsStream + ".>",
			"$JS.API.CONSUMER.DELETE." + GrantsStream + ".>",
			"$JS.API.DIRECT.GET." + GrantsStream + ".>",
			"$JS.FC." + GrantsStream + ".>",
			"$KV." + GrantsBucket + ".*",
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{relayInbox(host) + ".>"}},
	}
}

// ApproverPermissions is what a console or headless approver may do: read
// the asks, create decisions, read and write grants. It cannot publish asks
// or withdrawals, nor change the stream and bucket configurations.
func ApproverPermissions() *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			"$KV." + DecisionsBucket + ".>",
			"$KV." + GrantsBucket + ".>",
			"$JS.API.STREAM.INFO.*",
			"$JS.API.STREAM.MSG.GET.*",
			"$JS.API.DIRECT.GET.>",
			"$JS.API.CONSUMER.CREATE.>",
			"$JS.API.CONSUMER.INFO.>",
			"$JS.API.CONSUMER.DELETE.>",
			"$JS.API.CONSUMER.MSG.NEXT.>",
			"$JS.ACK.>",
			"$JS.FC.>",
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
	}
}
