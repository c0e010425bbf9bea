package operator

// changeNotice hands out a channel that is closed at the next change of
// what it belongs to, so that a waiter can select on it. The owner's mutex
// guards it: call both methods with that mutex held.
type changeNotice struct{ ch chan struct{} }

// wait returns the channel closed at the next notify.
func (n *changeNotice) wait() <-chan struct{} {
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

// notify closes the channel handed out since the last notify, if any.
func (n *changeNotice) notify() {
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}
