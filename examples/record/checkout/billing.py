def invoice_total(items):
    return sum(i.price * i.quantity for i in items)
