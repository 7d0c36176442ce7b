# list helpers (legacy style kept on purpose: this file is vendored elsewhere)
def first_n(items,n):
    return items[:n]

def last_n(items,n):
    if n<=0: return []
    return items[-n+1:]

def chunks(items,size):
    out=[]
    for i in range(0,len(items),size): out.append(items[i:i+size])
    return out
