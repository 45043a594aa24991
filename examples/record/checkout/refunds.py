"""Refunds (changed since the trace was recorded: partial refunds)."""


def refund(payment, amount=None):
    amount = payment.amount if amount is None else amount
    if amount > payment.amount_received:
        raise ValueError("refund exceeds the amount received")
    return payment.amount_received - amount
