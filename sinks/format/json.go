package format

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/kick-operator/kick/router"
)

// jsonFormatter sends the Payload (phase change) or GatePayload (gate change) document as
// application/json.
type jsonFormatter struct{}

func (jsonFormatter) Format(ev router.Event) (Message, error) {
	doc, err := document(ev)
	if err != nil {
		return Message{}, err
	}
	return jsonMessage(doc)
}

func (jsonFormatter) Summarize(s Summary) (Message, error) {
	return jsonMessage(NewSummaryPayload(s))
}

// jsonMessage is v, marshalled, as an application/json body.
func jsonMessage(v any) (Message, error) {
	body, err := marshal(v)
	if err != nil {
		return Message{}, err
	}
	h := make(http.Header)
	h.Set("Content-Type", "application/json")
	return Message{Body: body, Header: h}, nil
}

// marshal encodes v as compact JSON without HTML escaping (receivers read JSON, not HTML) and
// without the encoder's trailing newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
